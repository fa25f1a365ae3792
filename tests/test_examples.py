"""The guide's two programs (examples/) run end to end on CPU, and their loss decreases."""

import importlib.util
import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
PLANETOID = ROOT.parent / "shared" / "data" / "planetoid"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("amp", ["bf16", "fp16", "none"])
def test_gat_amp_reddit_like(amp, capsys):
    losses = _load("gat_amp_reddit").main(["--dataset", "reddit-like", "--scale", "0.002", "--epochs", "6",
                                           "--hidden", "32", "--amp", amp, "--device", "cpu"])
    assert len(losses) == 6 and losses[-1] < losses[0]
    assert "Epoch 5 | Loss" in capsys.readouterr().out


@pytest.mark.skipif(not PLANETOID.exists(), reason="shared/data not available")
def test_gcn_bf16_citeseer():
    # the guide's program draws from torch's global generator: seed it, so the outcome does not depend on the
    # tests that ran before; 100 epochs (the program's default) clear the bound for every seed tried (0-7:
    # loss ratio 0.35-0.42), where 60 epochs failed it for half of them (0.53-0.62)
    torch.manual_seed(0)
    losses, acc = _load("gcn_bf16_citeseer").main(["--data-dir", str(PLANETOID), "--epochs", "100"])
    assert losses[-1] < losses[0] * 0.6 and acc > 0.6
