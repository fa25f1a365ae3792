"""Two gloo ranks on 127.0.0.1: remote rows equal single-process gathers in every dtype; sampling, splits, loader."""

import pytest
import torch

from mpgraph.data import CSBMDataset
from mpgraph.distributed import load_partition_book, partition_graph

FEATS = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64}


def _toy_graph():
    g = CSBMDataset(num_nodes=300, num_classes=3, avg_degree=6, num_feats=8, seed=1)[0]
    f = g.ndata["feat"]
    for name, dtype in FEATS.items():
        g.ndata[name] = f.to(dtype)
    g.edata["w"] = torch.randn(g.num_edges(), 2, generator=torch.Generator().manual_seed(0))
    return g


@pytest.fixture(scope="module")
def run(tmp_path_factory, launch):
    """One 2-rank job (tests/distributed/_worker.py fetch), shared by the tests of this module."""
    tmp = tmp_path_factory.mktemp("fetch")
    g = _toy_graph()
    partition_graph(g, "toy", 2, tmp / "parts")
    out = tmp / "out"
    out.mkdir()
    job = launch.ranks([launch.WORKER, "fetch", tmp / "parts" / "toy.json", out], tmp)
    results = job.wait(timeout=80)
    assert [rc for rc, _, _ in results] == [0, 0], job.outputs()
    ranks = [torch.load(out / f"rank{r}.pt", weights_only=False) for r in range(2)]
    gpb, *_ = load_partition_book(tmp / "parts" / "toy.json", 0)
    return g, ranks, (out / "hang.txt").read_text(), gpb


def test_remote_rows_equal_single_process_gather(run):
    g, ranks, _, gpb = run
    for res in ranks:
        ids = res["ids"]
        owners = set(gpb.nid2partid(ids).tolist())
        assert owners == {0, 1}                           # local and remote rows in one read
        for name, dtype in FEATS.items():
            got = res[name]
            assert got.dtype == dtype
            assert torch.equal(got, g.ndata[name][ids]), name
        assert torch.equal(res["label"], g.ndata["label"][ids])
        assert torch.equal(res["w"], g.edata["w"][res["eids"]])
        assert res["empty"].shape == (0, 8)


def test_bytes_follow_storage_dtype(run):
    _, ranks, _, _ = run
    for res in ranks:
        sent = {k: res[f"{k}_stats"]["bytes_received"]["feature"] for k in FEATS}
        assert sent["f32"] > 0
        assert sent["bf16"] * 2 == sent["f32"] and sent["f16"] * 2 == sent["f32"]
        assert sent["f64"] == 2 * sent["f32"]
        ids_bytes = res["f32_stats"]["bytes_sent"]["ids"]
        assert ids_bytes == res["bf16_stats"]["bytes_sent"]["ids"] > 0
        assert ids_bytes % 4 == 0                          # IDs travel as int32 for graphs under 2**31 nodes


def test_collective_write(run):
    g, ranks, _, _ = run
    expect = g.ndata["f32"].clone()
    N = g.num_nodes()
    for r in range(2):
        expect[torch.arange(r, N, 7)] = float(r + 1000)
    for res in ranks:
        assert torch.equal(res["after_write"], expect)


def test_sampling_uses_true_in_edges(run):
    g, ranks, _, _ = run
    src, dst = g.edges()
    for res in ranks:
        seeds = res["seeds"]
        want = torch.isin(dst, seeds).nonzero().squeeze(1)
        got = sorted(zip(res["full_src"].tolist(), res["full_dst"].tolist(), res["full_eid"].tolist()))
        assert got == sorted(zip(src[want].tolist(), dst[want].tolist(), want.tolist()))
        e = res["two_eid"]
        assert torch.equal(src[e], res["two_src"]) and torch.equal(dst[e], res["two_dst"])
        assert e.unique().numel() == e.numel()
        deg = g.in_degrees(seeds)
        counts = torch.stack([(res["two_dst"] == s).sum() for s in seeds])
        assert torch.equal(counts, deg.clamp(max=2))


def test_node_split(run):
    g, ranks, _, gpb = run
    train = g.ndata["train_mask"].nonzero().squeeze(1)
    even = [res["split_even"] for res in ranks]
    assert sorted(torch.cat(even).tolist()) == train.tolist()
    assert abs(even[0].numel() - even[1].numel()) <= 1
    for r, res in enumerate(ranks):
        assert torch.equal(res["split_owned"], train[gpb.nid2partid(train) == r])


def test_loader_batches_and_features(run):
    g, ranks, _, _ = run
    assert ranks[0]["num_batches"] == ranks[1]["num_batches"] == len(ranks[1]["batches"]) == len(ranks[0]["batches"])
    src, dst = g.edges()
    for r, res in enumerate(ranks):
        seeds = torch.cat([b[1] for b in res["batches"]])
        mine = res["split_even"][: 5 + 7 * r]
        assert set(seeds.tolist()) == set(mine.tolist())
        for (input_nodes, output_nodes, feat, label, edges, ids), again in zip(res["batches"], res["batches_again"]):
            assert torch.equal(again[0], input_nodes) and torch.equal(again[1], output_nodes)   # epoch reproduced
            assert feat.dtype == torch.bfloat16 and torch.equal(feat, g.ndata["bf16"][input_nodes])
            assert torch.equal(label, g.ndata["label"][output_nodes])
            for (bs, bd), (sid, did, eid) in zip(edges, ids):
                assert torch.equal(src[eid], sid[bs]) and torch.equal(dst[eid], did[bd])


def test_hung_peer_fails_within_timeout(run):
    _, _, hang, _ = run
    elapsed, message = hang.split("\n", 1)
    assert float(elapsed) < 10
    assert "rank 0" in message and "did not answer within the 3 s timeout" in message
