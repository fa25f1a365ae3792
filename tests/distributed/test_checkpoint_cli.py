"""Checkpoints (atomic, verified, RNG state) and the settings checks of run_distributed, in one process."""

import argparse
import os
import random

import numpy as np
import pytest
import torch

from mpgraph import DGLError
from mpgraph.data import CSBMDataset
from mpgraph.distributed import load_checkpoint, partition_graph, save_checkpoint
from mpgraph.distributed.checkpoint import rng_state, set_rng_state
from mpgraph.distributed.train import _config, _prepare_partition, build_parser, run_distributed


def test_checkpoint_round_trip_and_rng(tmp_path):
    path = tmp_path / "ck" / "checkpoint.pt"
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    torch.manual_seed(5)
    np.random.seed(5)
    random.seed(5)
    state = rng_state()
    save_checkpoint(path, {"epoch": 4, "model": model.state_dict(), "optimizer": opt.state_dict(), "rng": [state]})
    want = (torch.rand(3), np.random.rand(3), random.random())
    ck = load_checkpoint(path)
    assert ck["epoch"] == 4 and torch.equal(ck["model"]["weight"], model.weight.detach())
    opt2 = torch.optim.Adam(torch.nn.Linear(3, 2).parameters())
    opt2.load_state_dict(ck["optimizer"])
    set_rng_state(ck["rng"][0])
    got = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and got[2] == want[2]
    assert sorted(os.listdir(tmp_path / "ck")) == ["checkpoint.pt"]                   # no temporary files left


def test_checkpoint_errors(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {"epoch": 1, "w": torch.ones(100)})
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(DGLError, match="corrupted"):
        load_checkpoint(path)
    torch.save({"epoch": 1}, path)
    with pytest.raises(DGLError, match="not an mpgraph checkpoint"):
        load_checkpoint(path)
    with pytest.raises(DGLError, match="no such file"):
        load_checkpoint(tmp_path / "missing.pt")
    with pytest.raises(DGLError, match="expected a dict"):
        save_checkpoint(path, [1])


def test_settings_errors(capsys):
    p = build_parser()
    assert run_distributed(argparse.Namespace(model="gcn")) == 2
    assert "expected --model sage" in capsys.readouterr().err
    assert run_distributed(p.parse_args(["--fanouts", "5,5,5"])) == 2
    assert "one fanout per layer" in capsys.readouterr().err
    assert run_distributed(p.parse_args(["--resume"])) == 2
    assert "--resume needs --checkpoint-dir" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        p.parse_args(["--checkpoint-every", "0"])


def test_partition_reuse_rules(tmp_path):
    cfg = _config(build_parser().parse_args(["--graph-name", "g", "--part-dir", str(tmp_path), "--scale", "0.01"]))
    made = _prepare_partition(cfg, 2, None)                                         # rank 0 partitions csbm
    assert made["partitioned"] and made["num_classes"] == 5
    assert not _prepare_partition(cfg, 2, None)["partitioned"]                     # then reuses it
    with pytest.raises(DGLError, match="has 2 parts, this job has 3"):
        _prepare_partition(cfg, 3, None)
    other = dict(cfg, seed=1)
    with pytest.raises(DGLError, match="was partitioned from"):
        _prepare_partition(other, 2, None)
    g = CSBMDataset(num_nodes=100, num_classes=2, num_feats=4)[0]
    partition_graph(g, "mine", 2, tmp_path / "own")                                  # no dataset metadata
    own = dict(cfg, graph_name="mine", part_dir=str(tmp_path / "own"))
    assert _prepare_partition(own, 2, None)["num_classes"] is None                  # used as is
