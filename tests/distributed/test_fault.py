"""A rank killed mid-epoch stops the other with a clear error; --resume finishes with no lost or repeated epoch."""

import json

import pytest
import torch

from mpgraph.data import CSBMDataset
from mpgraph.distributed import load_checkpoint, partition_graph

EPOCHS = 6


def _args(tmp_path, *extra):
    return ["-m", "mpgraph.distributed.train", "--graph-name", "small", "--part-dir", tmp_path / "parts",
            "--epochs", EPOCHS, "--batch-size", 64, "--fanouts", "5,5", "--hidden", 16, "--checkpoint-dir",
            tmp_path / "ckpt", "--checkpoint-every", 1, "--dist-timeout", 20, "--json", tmp_path / "result.json",
            *extra]


def test_killed_rank_then_resume(tmp_path, launch):
    g = CSBMDataset(num_nodes=600, num_classes=3, avg_degree=6, num_feats=16, snr=1.5, seed=3)[0]
    partition_graph(g, "small", 2, tmp_path / "parts")
    # rank 1 kills itself (SIGKILL) at the start of batch 1 of epoch 3
    job = launch.ranks(_args(tmp_path), tmp_path, env={"MPGRAPH_DIST_FAULT": "1:3:1"}, tag="crash")
    (rc0, out0, err0), (rc1, _, _) = job.wait(timeout=90)
    assert rc1 == -9, job.outputs()
    assert rc0 == 3, job.outputs()
    assert job.ended[0] - job.ended[1] < 60
    assert "rank 0: the collective" in err0 and "a peer process died" in err0 and "--resume" in err0
    assert "Traceback" not in err0
    ckpt = load_checkpoint(tmp_path / "ckpt" / "checkpoint.pt")
    assert ckpt["epoch"] == 2 and len(ckpt["rng"]) == 2
    # resume: epochs 3..5 only
    job = launch.ranks(_args(tmp_path, "--resume"), tmp_path, tag="resume")
    results = job.wait(timeout=90)
    assert [rc for rc, _, _ in results] == [0, 0], job.outputs()
    s = json.loads((tmp_path / "result.json").read_text())
    assert s["resumed"] and s["start_epoch"] == 3 and s["epochs_run"] == [3, 4, 5]
    assert s["params_identical"] and len(s["losses"]) == EPOCHS
    log = [json.loads(line) for line in (tmp_path / "ckpt" / "epochs.jsonl").read_text().splitlines()]
    epochs = [(e["epoch"], e["attempt"]) for e in log if e["event"] == "epoch"]
    assert epochs == [(0, 1), (1, 1), (2, 1), (3, 2), (4, 2), (5, 2)]          # each epoch once
    assert [e["event"] for e in log if e["event"] != "epoch"] == ["start", "resume"]
    final = load_checkpoint(tmp_path / "ckpt" / "checkpoint.pt")
    assert final["epoch"] == EPOCHS - 1
    assert all(torch.isfinite(v).all() for v in final["model"].values())


@pytest.mark.slow
def test_resume_after_losing_rank_0_is_bit_identical(tmp_path, launch):
    """Kill rank 0 (host of the rendezvous store) mid-epoch; crash + resume equals an uninterrupted run bit for bit."""
    g = CSBMDataset(num_nodes=600, num_classes=3, avg_degree=6, num_feats=16, snr=1.5, seed=3)[0]
    partition_graph(g, "small", 2, tmp_path / "parts")
    straight = tmp_path / "straight"
    straight.mkdir()
    (straight / "parts").symlink_to(tmp_path / "parts")
    job = launch.ranks(_args(straight), tmp_path, tag="straight")
    assert [rc for rc, _, _ in job.wait(timeout=90)] == [0, 0], job.outputs()
    job = launch.ranks(_args(tmp_path), tmp_path, env={"MPGRAPH_DIST_FAULT": "0:4:2"}, tag="crash0")
    (rc0, _, _), (rc1, _, err1) = job.wait(timeout=90)
    assert rc0 == -9 and rc1 == 3, job.outputs()
    assert job.ended[1] - job.ended[0] < 60 and "rank 1: the collective" in err1
    job = launch.ranks(_args(tmp_path, "--resume"), tmp_path, tag="resume0")
    assert [rc for rc, _, _ in job.wait(timeout=90)] == [0, 0], job.outputs()
    a = json.loads((straight / "result.json").read_text())
    b = json.loads((tmp_path / "result.json").read_text())
    assert b["epochs_run"] == [4, 5]
    assert a["losses"] == b["losses"]
    assert a["param_sha256"] == b["param_sha256"]
