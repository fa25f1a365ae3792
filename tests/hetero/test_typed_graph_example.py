"""The generated typed graph (mpgraph.data.typed_graph) and the RGCN example (fp32 and amp-bf16)."""

import importlib.util
import os

import pytest
import torch

from mpgraph.base import DGLError
from mpgraph.data.typed_graph import TYPED_RELATIONS, SyntheticTypedGraphDataset, typed_citation_graph
from mpgraph.heterograph import HeteroGraph

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "rgcn_hetero.py")


def _load_example():
    spec = importlib.util.spec_from_file_location("rgcn_hetero", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generator_is_deterministic_and_typed():
    a = typed_citation_graph(num_papers=120, num_authors=50, num_venues=6, seed=4)
    b = typed_citation_graph(num_papers=120, num_authors=50, num_venues=6, seed=4)
    c = typed_citation_graph(num_papers=120, num_authors=50, num_venues=6, seed=5)
    assert isinstance(a, HeteroGraph) and a.canonical_etypes == sorted(TYPED_RELATIONS)
    for cet in a.canonical_etypes:
        for x, y in zip(a.edges(etype=cet), b.edges(etype=cet)):
            assert torch.equal(x, y)
    assert not torch.equal(a.nodes["paper"].data["feat"], c.nodes["paper"].data["feat"])
    for nt in a.ntypes:
        assert torch.equal(a.nodes[nt].data["feat"], b.nodes[nt].data["feat"])
        assert a.nodes[nt].data["feat"].dtype == torch.float32
    # each forward relation has its reverse
    for fwd, rev in zip(TYPED_RELATIONS[::2], TYPED_RELATIONS[1::2]):
        u, v = a.edges(etype=fwd, order="srcdst")
        ru, rv = a.edges(etype=rev)
        assert sorted(zip(u.tolist(), v.tolist())) == sorted(zip(rv.tolist(), ru.tolist()))
    # masks partition the papers; structure follows the classes
    m = [a.nodes["paper"].data[k] for k in ("train_mask", "val_mask", "test_mask")]
    assert torch.equal(m[0].int() + m[1].int() + m[2].int(), torch.ones(120, dtype=torch.int32))
    u, v = a.edges(etype="writes")
    same = (a.nodes["author"].data["label"][u] == a.nodes["paper"].data["label"][v]).float().mean()
    assert same > 0.6
    assert a.num_edges("published-in") == 120
    with pytest.raises(DGLError, match="homophily"):
        typed_citation_graph(homophily=1.5)


def test_dataset_wrapper():
    ds = SyntheticTypedGraphDataset(num_papers=60, num_authors=30, num_venues=6, num_classes=3, seed=3)
    g = ds[0]
    assert len(ds) == 1 and ds.predict_category == "paper" and ds.num_classes == 3
    assert int(g.nodes["paper"].data["label"].max()) == 2


def test_rgcn_example_fp32_and_amp_bf16(capsys):
    ex = _load_example()
    results = ex.main(["--epochs", "25", "--precision", "both", "--num-papers", "240", "--num-authors", "120",
                       "--num-venues", "8", "--hidden", "16"])
    table = capsys.readouterr().out
    print(table)
    assert [r["precision"] for r in results] == ["fp32", "amp-bf16"]
    fp32, bf16 = results
    for r in results:
        assert r["train_acc"] > 0.85 and r["test_acc"] > 0.6, r       # 4 classes: chance is 1/4
    assert abs(fp32["test_acc"] - bf16["test_acc"]) <= 0.1, results
