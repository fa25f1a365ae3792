"""The DGLDataset construction protocol, as DGL's."""

import os

import pytest

from mpgraph.data import DGLDataset


class Recorder(DGLDataset):
    def __init__(self, calls, cached=False, fail_load=False, **kwargs):
        self.calls, self.cached, self.fail_load = calls, cached, fail_load
        super().__init__("toy", url="http://example.invalid/toy.zip", **kwargs)

    def download(self):
        self.calls.append("download")
        os.makedirs(self.raw_path)

    def process(self):
        self.calls.append("process")
        self.items = ["a", "b"]

    def save(self):
        self.calls.append("save")

    def load(self):
        self.calls.append("load")
        if self.fail_load:
            raise OSError("corrupt cache")
        self.items = ["cached"]

    def has_cache(self):
        return self.cached

    def __getitem__(self, idx):
        item = self.items[idx]
        return item if self._transform is None else self._transform(item)

    def __len__(self):
        return len(self.items)


def test_protocol_order(tmp_path):
    calls = []
    ds = Recorder(calls, raw_dir=str(tmp_path))
    assert calls == ["download", "process", "save"]
    calls.clear()
    Recorder(calls, raw_dir=str(tmp_path))  # raw_path exists now: no download
    assert calls == ["process", "save"]
    calls.clear()
    assert Recorder(calls, cached=True, raw_dir=str(tmp_path))[0] == "cached"
    assert calls == ["load"]
    calls.clear()
    Recorder(calls, cached=True, force_reload=True, raw_dir=str(tmp_path))
    assert calls == ["process", "save"]
    calls.clear()
    assert Recorder(calls, cached=True, fail_load=True, raw_dir=str(tmp_path))[1] == "b"  # falls back
    assert calls == ["load", "process", "save"]
    assert len(ds) == 2 and ds.url == "http://example.invalid/toy.zip"


def test_paths_hash_transform_repr(tmp_path, monkeypatch):
    monkeypatch.setenv("MPGRAPH_DOWNLOAD_DIR", str(tmp_path / "root"))
    ds = Recorder([], transform=str.upper)
    assert ds.raw_dir == str(tmp_path / "root") and ds.raw_path == str(tmp_path / "root" / "toy")
    assert ds.save_dir == ds.raw_dir and ds.save_path == str(tmp_path / "root" / "toy")
    assert ds.hash == "f9065fa7"  # DGL's value for hash_key=()
    assert Recorder([], raw_dir=str(tmp_path), hash_key=(10, False, True)).hash == "a770b222"  # DGL's docstring
    assert ds[0] == "A" and ds.name == "toy" and ds.verbose is False
    assert repr(ds) == f'Dataset("toy", num_graphs=2, save_path={tmp_path / "root" / "toy"})'
    other = Recorder([], raw_dir=str(tmp_path / "r"), save_dir=str(tmp_path / "s"))
    assert other.save_path == str(tmp_path / "s" / "toy")
    with pytest.raises(NotImplementedError):
        _ = other.num_classes


def test_generated_datasets_touch_no_files(tmp_path, monkeypatch):
    from mpgraph.data import CSBMDataset

    monkeypatch.setenv("MPGRAPH_DOWNLOAD_DIR", str(tmp_path / "never"))
    ds = CSBMDataset(num_nodes=50, num_classes=2, avg_degree=3, num_feats=4)
    assert "csbm" in repr(ds)
    assert not (tmp_path / "never").exists()
    with pytest.raises(IndexError):
        ds[1]
    assert ds[-1] is ds[0]
