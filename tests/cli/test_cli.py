"""The ``mpgraph`` command: train, bench precision, info; argument errors; output files."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from mpgraph.cli.bench import mem_epoch_cells
from mpgraph.cli.main import build_parser, main
from mpgraph.cli.models import build_model

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLANETOID = ROOT.parent / "shared" / "data" / "planetoid"


def test_train_csbm_fp32_and_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = main(["train", "--model", "gcn", "--epochs", "5", "--scale", "0.05", "--quiet", "--json", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "test accuracy at best val" in text and "peak memory" in text and "edges per second" in text
    data = json.loads(out.read_text())
    assert data["precision"] == "fp32" and len(data["losses"]) == 5 and data["median_epoch_s"] > 0
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]


@pytest.mark.parametrize("precision", ["bf16", "fp16", "amp-bf16", "amp-fp16"])
@pytest.mark.parametrize("model", ["gcn", "gat", "sage", "gin", "appnp", "sgc"])
def test_train_every_model_and_precision(model, precision, tmp_path):
    out = tmp_path / "r.json"
    rc = main(["train", "--model", model, "--precision", precision, "--epochs", "3", "--scale", "0.03",
               "--quiet", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert all(l == l and l < 100 for l in data["losses"])  # finite


def test_train_runs_mean_std_and_plot(tmp_path, capsys):
    png = tmp_path / "curves.png"
    assert main(["train", "--epochs", "3", "--runs", "2", "--scale", "0.03", "--quiet", "--plot", str(png)]) == 0
    assert "(2 runs)" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not PLANETOID.exists(), reason="shared/data not available")
def test_train_cora_from_data_dir(capsys):
    rc = main(["train", "--dataset", "cora", "--data-dir", str(PLANETOID.parent), "--epochs", "30", "--quiet"])
    assert rc == 0
    assert "2708 nodes" in capsys.readouterr().out


def test_missing_dataset_gives_clear_message(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MPGRAPH_OFFLINE", "1")
    monkeypatch.setenv("MPGRAPH_DOWNLOAD_DIR", str(tmp_path))
    rc = main(["train", "--dataset", "citeseer", "--data-dir", str(tmp_path), "--epochs", "1", "--quiet"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "mpgraph train: error:" in err and "ind.citeseer" in err


@pytest.mark.parametrize("argv, needle", [
    (["train", "--model", "nope"], "invalid choice"),
    (["train", "--epochs", "0"], "positive integer"),
    (["train", "--epochs", "x"], "positive integer"),
    (["train", "--dropout", "1.5"], "dropout"),
    (["train", "--precision", "fp8"], "invalid choice"),
    (["train", "--heads", "8,a"], "head counts"),
    (["train", "--patience", "0"], "positive integer"),
    (["bench", "precision", "--precisions", "fp32,fp64"], "subset"),
    ([], "required"),
])
def test_bad_arguments_are_argparse_errors(argv, needle, capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err


def test_heads_must_match_layers(capsys):
    with pytest.raises(SystemExit, match="head counts"):
        main(["train", "--model", "gat", "--heads", "2,2", "--layers", "3", "--epochs", "1", "--quiet"])


def test_gat_model_drops_where_the_reference_code_does():
    model = build_model("gat", 20, 3, hidden=8, layers=2, dropout=0.6, heads=[8, 1])
    for layer in model.layers:
        assert layer.feat_drop.p == layer.attn_drop.p == layer.msg_drop.p == 0.6
    guide = build_model("gat", 20, 3, hidden=16, layers=3, dropout=0.0, heads=[1, 1, 1])
    assert all(layer.msg_drop.p == 0 for layer in guide.layers)


def test_info_runs(capsys):
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert "torch" in text and "backend per op" in text and "cpu/bfloat16" in text
    assert "cpu_half_matmul" in text


def test_info_reports_the_half_matmul_route(monkeypatch):
    from mpgraph.cli.info import collect
    monkeypatch.setenv("MPGRAPH_HALF_MATMUL", "fp32")
    assert collect()["cpu_half_matmul"] == {"bfloat16": "fp32", "float16": "fp32"}
    monkeypatch.setenv("MPGRAPH_HALF_MATMUL", "native")
    assert collect()["cpu_half_matmul"] == {"bfloat16": "torch", "float16": "torch"}


def test_bench_memory_note_only_for_resident_pages_with_huge_pages():
    from mpgraph.cli.bench import _memory_note
    cpu, cuda = {"fp32": {"mem_method": "VmHWM"}}, {"fp32": {"mem_method": "cuda.max_memory_allocated"}}
    assert "THP_MEM_ALLOC_ENABLE=0" in _memory_note(cpu, {"THP_MEM_ALLOC_ENABLE": "1"})
    assert _memory_note(cpu, {"THP_MEM_ALLOC_ENABLE": "0"}) is None
    assert _memory_note(cuda, {"THP_MEM_ALLOC_ENABLE": "1"}) is None


def test_bench_precision_small(tmp_path):
    out, png = tmp_path / "b.json", tmp_path / "b.png"
    cmd = [sys.executable, "-m", "mpgraph", "bench", "precision", "--model", "gcn", "--dataset", "csbm",
           "--scale", "0.03", "--epochs", "3", "--hidden", "16", "--layers", "2", "--precisions", "fp32,bf16",
           "--repeats", "2", "--json", str(out), "--plot", str(png)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert set(report["results"]) == {"fp32", "bf16"} and report["repeats"] == 2
    assert report["ratios_to_fp32"]["fp32"]["epoch_time"] == 1.0
    for r in report["results"].values():      # medians of the two repeats, each repeat kept
        assert len(r["median_epoch_s_runs"]) == len(r["peak_mem_bytes_runs"]) == 2
        assert r["median_epoch_s"] == pytest.approx(sum(r["median_epoch_s_runs"]) / 2)
    assert "mem/fp32" in proc.stdout and "median [range]" in proc.stdout and png.exists()
    assert proc.stdout.count("(repeat 2/2)") == 2
    # the settings the figures ran under: mpgraph's defaults, inherited by the training processes
    assert report["environment"]["THP_MEM_ALLOC_ENABLE"] == os.environ.get("THP_MEM_ALLOC_ENABLE", "1")
    assert report["environment"]["OMP_WAIT_POLICY"] == os.environ.get("OMP_WAIT_POLICY", "PASSIVE")
    assert ("counted in pages" in proc.stdout) == (report["environment"]["THP_MEM_ALLOC_ENABLE"] == "1")
    rst = subprocess.run([sys.executable, str(ROOT / "docs" / "results_to_rst.py"), "precision", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert rst.returncode == 0, rst.stderr
    for r in report["results"].values():      # the docs table shows the console's median [range] cells
        mem, epoch = mem_epoch_cells(r, repeated=True)
        assert "[" in mem and f"- {mem}\n" in rst.stdout and f"- {epoch}\n" in rst.stdout
        assert mem in proc.stdout and epoch in proc.stdout


@pytest.mark.parametrize("model, precision", [("sage", "fp32"), ("gat", "amp-bf16")])
def test_train_minibatch(model, precision, tmp_path):
    out = tmp_path / "m.json"
    rc = main(["train", "--model", model, "--minibatch", "--fanouts", "5,3", "--batch-size", "128", "--epochs", "2",
               "--precision", precision, "--scale", "0.05", "--quiet", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["minibatch"] and data["fanouts"] == [5, 3] and len(data["losses"]) == 2


def test_minibatch_rejects_bad_model_and_fanouts():
    with pytest.raises(SystemExit, match="supports --model"):
        main(["train", "--model", "gcn", "--minibatch", "--epochs", "1", "--quiet"])
    with pytest.raises(SystemExit, match="fanout"):
        main(["train", "--model", "sage", "--minibatch", "--fanouts", "5,5,5", "--epochs", "1", "--quiet"])


@pytest.mark.skipif(not PLANETOID.is_dir(), reason="needs ../shared/data/planetoid")
def test_train_patience_stops_early_and_reports_the_selected_epoch(tmp_path):
    out = tmp_path / "r.json"
    rc = main(["train", "--model", "gcn", "--dataset", "cora", "--data-dir", str(PLANETOID.parent), "--epochs", "400",
               "--patience", "5", "--quiet", "--runs", "2", "--json", str(out)])
    assert rc == 0
    data = json.loads(out.read_text())
    for run in data["per_run"]:
        # stopped well before the 400 allowed epochs; the selected epoch is at least `patience` back
        assert run["epochs_run"] < 400
        assert run["best_epoch"] <= run["epochs_run"] - 1 - 5
    assert len(data["losses"]) == data["per_run"][0]["epochs_run"]
