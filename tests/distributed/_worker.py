"""One rank of the distributed tests' jobs: ``python _worker.py fetch PART_CONFIG OUT_DIR`` (env:// variables set).

Fetches rows of every feature dtype, samples, splits nodes, writes rows,
and finally checks that a hung peer makes a collective fail within a short
timeout. Results go to ``OUT_DIR/rank<r>.pt`` for the test to compare with
single-process gathers.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

from mpgraph.dataloading import NeighborSampler
from mpgraph.distributed import DistGraph, DistNodeDataLoader, DistributedError, node_split, sample_neighbors

FEATS = ("f32", "f16", "bf16", "f64")


def fetch(part_config, out_dir):
    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
    torch.set_num_threads(1)
    g = DistGraph("toy", part_config=part_config)
    N = g.num_nodes()
    gen = torch.Generator().manual_seed(100 + rank)
    res = {"rank": rank}
    # ---- rows of every dtype: a mix of local and remote IDs, with repeats
    ids = torch.randint(0, N, (57,), generator=gen)
    res["ids"] = ids
    for name in FEATS:
        g.reset_comm_stats()
        res[name] = g.ndata[name][ids]
        res[f"{name}_stats"] = g.comm_stats()
    res["label"] = g.ndata["label"][ids]
    res["empty"] = g.ndata["f32"][torch.zeros(0, dtype=torch.int64)]          # nothing to read on this rank
    eids = torch.randint(0, g.num_edges(), (23,), generator=gen)
    res["eids"] = eids
    res["w"] = g.edata["w"][eids]
    # ---- writes: each rank writes rows of its own choosing, then both read them back
    wids = torch.arange(rank, N, 7)
    g.ndata["f32"][wids] = torch.full((wids.numel(), g.ndata["f32"].shape[1]), float(rank + 1000))
    g.barrier()
    res["after_write"] = g.ndata["f32"][torch.arange(N)]
    # ---- sampling: every in-edge (fanout -1) and a fanout of 2
    seeds = torch.randperm(N, generator=gen)[:20]
    res["seeds"] = seeds
    full = sample_neighbors(g, seeds, -1)
    res["full_src"], res["full_dst"] = full.edges()
    res["full_eid"] = full.edata["_ID"]
    two = sample_neighbors(g, seeds, 2)
    res["two_src"], res["two_dst"] = two.edges()
    res["two_eid"] = two.edata["_ID"]
    # ---- node_split from a DistTensor mask, with and without balancing
    res["split_even"] = node_split(g.ndata["train_mask"], g.get_partition_book())
    res["split_owned"] = node_split(g.ndata["train_mask"], g.get_partition_book(), force_even=False)
    # ---- the loader: same number of batches on each rank; features fetched in their dtype
    sampler = NeighborSampler([3, 3], prefetch_node_feats=["bf16"], prefetch_labels=["label"])
    mine = res["split_even"][: 5 + 7 * rank]                      # unequal seed counts on the two ranks
    loader = DistNodeDataLoader(g, mine, sampler, batch_size=4, shuffle=True, seed=3)
    loader.set_epoch(1)
    batches = []
    for input_nodes, output_nodes, blocks in loader:
        batches.append((input_nodes, output_nodes, blocks[0].srcdata["bf16"], blocks[-1].dstdata["label"],
                        [b.edges() for b in blocks], [(b.srcdata["_ID"], b.dstdata["_ID"], b.edata["_ID"])
                                                      for b in blocks]))
    res["num_batches"] = len(loader)
    res["batches"] = batches
    loader.set_epoch(1)
    res["batches_again"] = [(i, o) for i, o, _ in loader]
    torch.save(res, os.path.join(out_dir, f"rank{rank}.pt"))
    g.barrier()
    # ---- a hung peer: rank 1 stops answering; rank 0's fetch must fail within the short timeout
    short = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=3))
    hg = DistGraph("toy", part_config=part_config, group=short)
    if rank == 1:                         # stop answering until rank 0 has given up (at most 20 s)
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(out_dir, "hang.txt")) and time.monotonic() < deadline:
            time.sleep(0.1)
        os._exit(0)
    t0 = time.monotonic()
    try:
        hg.ndata["f32"][torch.arange(N)]
    except DistributedError as err:
        with open(os.path.join(out_dir, "hang.tmp"), "w") as f:
            f.write(f"{time.monotonic() - t0:.3f}\n{err}\n")
        os.replace(os.path.join(out_dir, "hang.tmp"), os.path.join(out_dir, "hang.txt"))
        os._exit(0)
    os._exit(5)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "fetch":
        fetch(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {mode!r}")
