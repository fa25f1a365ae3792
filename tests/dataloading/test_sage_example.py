"""The mini-batch GraphSAGE example runs in every precision, with and without workers."""

import importlib.util
import pathlib

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "sage_minibatch.py"


def _load_example():
    spec = importlib.util.spec_from_file_location("sage_minibatch", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("precision, workers", [("fp32", "0"), ("bf16", "2"), ("amp-bf16", "0")])
def test_sage_minibatch_example(precision, workers, capsys):
    acc = _load_example().main(["--scale", "0.002", "--epochs", "2", "--hidden", "16", "--batch-size", "64",
                                "--precision", precision, "--num-workers", workers])
    out = capsys.readouterr().out
    assert "epoch   1" in out and "test accuracy" in out
    assert 0.0 <= acc <= 1.0
