"""save_graphs / load_graphs: bit-exact round trips, subsets, atomic writes, damaged files."""

import json
import os
import struct
import tempfile

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mpgraph as dgl
from mpgraph import graph_io
from mpgraph.base import DGLError
from mpgraph.batch import batch
from mpgraph.graph_io import FORMAT_VERSION, MAGIC, load_graphs, save_graphs

FLOATS = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]
OTHERS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64]


def _bits(t):
    """The raw bytes of ``t`` as a uint8 tensor (bit-exact comparison, NaN payloads included)."""
    return t.contiguous().reshape(-1).view(torch.uint8)


def assert_bit_equal(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert torch.equal(_bits(a), _bits(b))


def assert_same_graph(a, b):
    assert a.idtype == b.idtype and a.canonical_etypes == b.canonical_etypes and a.is_block == b.is_block
    assert (a.num_src_nodes(), a.num_dst_nodes(), a.num_edges()) == (b.num_src_nodes(), b.num_dst_nodes(),
                                                                    b.num_edges())
    for x, y in zip(a.edges(), b.edges()):
        assert_bit_equal(x, y)
    for fa, fb in zip(a._node_frames + [a.edata], b._node_frames + [b.edata]):
        assert list(fa) == list(fb)
        for k in fa:
            assert_bit_equal(fa[k], fb[k])
    assert (a._batch_num_nodes is None) == (b._batch_num_nodes is None)
    assert a.batch_num_nodes().tolist() == b.batch_num_nodes().tolist()
    assert a.batch_num_edges().tolist() == b.batch_num_edges().tolist()


def _random_bits(shape, dtype, gen):
    """A tensor of ``dtype`` with uniformly random bit patterns (NaNs, infs, subnormals, -0.0 included)."""
    n = 1
    for d in shape:
        n *= d
    size = torch.empty(0, dtype=dtype).element_size()
    raw = torch.randint(0, 256, (n * size,), dtype=torch.uint8, generator=gen)
    if dtype == torch.bool:
        raw = raw % 2
    return raw.view(dtype).reshape(shape)


def _graph(n, e, idtype, dtypes, seed):
    gen = torch.Generator().manual_seed(seed)
    g = dgl.graph((torch.randint(0, max(n, 1), (e if n else 0,), generator=gen),
                   torch.randint(0, max(n, 1), (e if n else 0,), generator=gen)), num_nodes=n, idtype=idtype)
    for i, dt in enumerate(dtypes):
        g.ndata[f"n{i}"] = _random_bits((n, 2, 3) if i % 2 else (n,), dt, gen)
        g.edata[f"e{i}"] = _random_bits((g.num_edges(), 4), dt, gen)
    return g


@pytest.fixture
def path(tmp_path):
    return os.path.join(tmp_path, "graphs.bin")


@pytest.mark.parametrize("fdtype", FLOATS, ids=str)
def test_roundtrip_bit_exact(path, idtype, fdtype):
    special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40, -3.5, 65504.0])
    gs = [_graph(5, 7, idtype, [fdtype, torch.int64], 0), _graph(0, 0, idtype, [fdtype, torch.int64], 1),
          _graph(3, 0, idtype, [fdtype, torch.int64], 2)]
    gs[0].ndata["special"] = torch.cat([special.to(fdtype), torch.zeros(0, dtype=fdtype)])[:5]
    labels = {"y": torch.tensor([0, 1, 2]), "score": _random_bits((3, 2), fdtype, torch.Generator().manual_seed(3))}
    save_graphs(path, gs, labels)
    out, lab = load_graphs(path)
    assert len(out) == 3
    for a, b in zip(out, gs):
        assert_same_graph(a, b)
    assert list(lab) == ["y", "score"]
    for k in labels:
        assert_bit_equal(lab[k], labels[k])


@settings(max_examples=25, deadline=None)
@given(specs=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 8), st.integers(0, 999)), min_size=0, max_size=4),
       idtype=st.sampled_from([torch.int32, torch.int64]),
       dtypes=st.lists(st.sampled_from(FLOATS + OTHERS), max_size=3))
def test_roundtrip_hypothesis(specs, idtype, dtypes):
    gs = [_graph(n, e, idtype, dtypes, s) for n, e, s in specs]
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "g.bin")
        save_graphs(p, gs)
        out, labels = load_graphs(p)
    assert labels == {} and len(out) == len(gs)
    for a, b in zip(out, gs):
        assert_same_graph(a, b)


def test_kinds_of_graphs(path):
    bg = batch([_graph(3, 2, torch.int64, [torch.float32], 0), _graph(2, 4, torch.int64, [torch.float32], 1)])
    bip = dgl.heterograph({("user", "plays", "game"): ([0, 1, 2], [0, 0, 1])})
    bip.nodes["user"].data["h"] = torch.randn(3, 2, dtype=torch.bfloat16)
    bip.nodes["game"].data["g"] = torch.randn(2)
    block = dgl.create_block(([0, 1], [0, 0]), num_src_nodes=3, num_dst_nodes=1, idtype=torch.int32)
    block.srcdata["x"] = torch.ones(3, 1, dtype=torch.float16)
    single = dgl.graph(([0], [1]))
    save_graphs(path, single)  # a single graph is accepted
    assert len(load_graphs(path)[0]) == 1
    save_graphs(path, [bg, bip, block])   # replaces the file
    out, _ = load_graphs(path)
    for a, b in zip(out, [bg, bip, block]):
        assert_same_graph(a, b)
    assert out[0].batch_size == 2 and out[2].is_block
    assert out[1].ntypes == ["game", "user"]


def test_idx_list(path):
    gs = [_graph(i + 1, i, torch.int64, [torch.float16], i) for i in range(4)]
    save_graphs(path, gs, {"label": torch.arange(4)})
    out, labels = load_graphs(path, [3, 1])
    assert [g.num_nodes() for g in out] == [4, 2]
    assert_same_graph(out[0], gs[3])
    assert labels["label"].tolist() == [0, 1, 2, 3]
    assert len(load_graphs(path, [])[0]) == 0
    with pytest.raises(DGLError, match=r"expected graph indices in \[0, 4\) .* got \[4\]"):
        load_graphs(path, [0, 4])
    with pytest.raises(DGLError, match="got no such file"):
        load_graphs(path + ".missing")


def test_save_errors_leave_no_file(path, tmp_path):
    g = dgl.graph(([0], [1]))
    with pytest.raises(TypeError, match="expected labels as a dict"):
        save_graphs(path, [g], torch.tensor([1]))
    with pytest.raises(TypeError, match=r"expected label 'y' to be a torch.Tensor"):
        save_graphs(path, [g], {"y": [1, 2]})
    with pytest.raises(TypeError, match=r"expected graphs\[1\] to be an mpgraph Graph"):
        save_graphs(path, [g, "g"])
    with pytest.raises(DGLError, match="expected an existing directory"):
        save_graphs(os.path.join(tmp_path, "nope", "g.bin"), [g])
    assert os.listdir(tmp_path) == []


def test_atomic_write_keeps_old_file_on_failure(path, tmp_path, monkeypatch):
    g = dgl.graph(([0], [1]))
    save_graphs(path, [g])
    before = open(path, "rb").read()

    def boom(*args):
        raise OSError("disk full")

    monkeypatch.setattr(graph_io.os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        save_graphs(path, [g, g])
    monkeypatch.undo()
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["graphs.bin"]      # the temporary file was removed


# ---------------------------------------------------------------------------
# damaged files: always a clear DGLError, never a graph
# ---------------------------------------------------------------------------
def _small_file(path):
    g = dgl.graph(([0, 1, 2], [1, 2, 0]), idtype=torch.int32)
    g.ndata["h"] = torch.tensor([[1.0], [2.0], [3.0]], dtype=torch.bfloat16)
    g.edata["w"] = torch.tensor([1, 2, 3], dtype=torch.int8)
    save_graphs(path, [g], {"y": torch.tensor([1])})
    return open(path, "rb").read()


def test_every_flipped_byte_is_detected(path):
    data = _small_file(path)
    for pos in range(len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0x5A
        with open(path, "wb") as f:
            f.write(bad)
        with pytest.raises(DGLError, match="not a valid mpgraph graph file|newer mpgraph"):
            load_graphs(path)


def test_every_truncation_is_detected(path):
    data = _small_file(path)
    for cut in range(len(data)):
        with open(path, "wb") as f:
            f.write(data[:cut])
        with pytest.raises(DGLError, match="not a valid mpgraph graph file"):
            load_graphs(path)
    with open(path, "wb") as f:
        f.write(data + b"\0")
    with pytest.raises(DGLError, match="longer"):
        load_graphs(path)


def test_wrong_magic_and_future_version(path):
    data = _small_file(path)
    with open(path, "wb") as f:
        f.write(b"PK\x03\x04" + data[4:])
    with pytest.raises(DGLError, match="expected the magic bytes"):
        load_graphs(path)
    with open(path, "wb") as f:
        f.write(data[:8] + struct.pack("<I", FORMAT_VERSION + 1) + data[12:])
    with pytest.raises(DGLError, match=f"format version {FORMAT_VERSION + 1}, expected at most {FORMAT_VERSION}.*"
                                       "upgrade mpgraph"):
        load_graphs(path)


def test_header_is_documented_json(path):
    data = _small_file(path)
    assert data[:8] == MAGIC
    version, head_len = struct.unpack("<IQ", data[8:20])
    header = json.loads(data[52:52 + head_len])
    assert version == header["version"] == 1 and header["format"] == "mpgraph.graphs"
    assert len(data) == 52 + head_len + header["payload_size"]
    ref = header["graphs"][0]["node_data"][0]["h"]
    assert ref["dtype"] == "bfloat16" and ref["shape"] == [3, 1] and ref["nbytes"] == 6
    raw = data[52 + head_len + ref["offset"]:][:6]
    assert raw == torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16).view(torch.uint8).numpy().tobytes()


def test_consistent_header_with_bad_structure_is_rejected(path):
    """A self-consistent file (valid checksums) whose content is impossible still fails cleanly."""
    import hashlib
    data = _small_file(path)
    head_len = struct.unpack("<Q", data[12:20])[0]
    header = json.loads(data[52:52 + head_len])
    header["graphs"][0]["num_src_nodes"] = 2   # edges now point past the node count
    header["graphs"][0]["num_dst_nodes"] = 2
    head = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<IQ", 1, len(head)) + hashlib.sha256(head).digest() + head
                + data[52 + head_len:])
    with pytest.raises(DGLError, match=r"src node IDs in \[0, 2\)"):
        load_graphs(path)
