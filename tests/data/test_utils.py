"""download / checksum / extraction utilities, against a local HTTP server on 127.0.0.1."""

import hashlib
import io
import os
import tarfile
import zipfile

import numpy as np
import pytest
import torch

import mpgraph.data.utils as U
from mpgraph.base import DGLError
from mpgraph.data import DownloadError

BODY = bytes(range(256)) * 4099  # ~1 MiB, not a multiple of the read size


def _leftovers(directory):
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def test_download_success_with_checksums(http_server, tmp_path):
    http_server.add("/data/file.bin", BODY)
    dest = tmp_path / "out" / "file.bin"
    got = U.download(http_server.url("/data/file.bin"), path=str(dest), log=False,
                     sha1_hash=hashlib.sha1(BODY).hexdigest(), sha256_hash=hashlib.sha256(BODY).hexdigest())
    assert got == str(dest)
    assert dest.read_bytes() == BODY
    assert _leftovers(dest.parent) == ["file.bin"]  # no .part file left
    assert U.check_sha1(str(dest), hashlib.sha1(BODY).hexdigest().upper())
    assert U.check_sha256(str(dest), hashlib.sha256(BODY).hexdigest())
    assert not U.check_sha256(str(dest), "0" * 64)


def test_download_into_directory_and_overwrite_false(http_server, tmp_path):
    route = http_server.add("/a/b/name.txt", b"hello")
    got = U.download(http_server.url("/a/b/name.txt"), path=str(tmp_path), log=False)
    assert got == str(tmp_path / "name.txt") and (tmp_path / "name.txt").read_bytes() == b"hello"
    # overwrite=False with a matching checksum: no request.
    U.download(http_server.url("/a/b/name.txt"), path=got, overwrite=False, log=False,
               sha256_hash=hashlib.sha256(b"hello").hexdigest())
    assert route.requests == 1
    # overwrite=False with a stale file: downloaded again.
    (tmp_path / "name.txt").write_bytes(b"stale")
    U.download(http_server.url("/a/b/name.txt"), path=got, overwrite=False, log=False,
               sha256_hash=hashlib.sha256(b"hello").hexdigest())
    assert route.requests == 2 and (tmp_path / "name.txt").read_bytes() == b"hello"


def test_checksum_mismatch_rejects_file(http_server, tmp_path):
    route = http_server.add("/f.bin", BODY)
    dest = tmp_path / "f.bin"
    with pytest.raises(DownloadError, match="checksum mismatch.*expected sha256 0000") as info:
        U.download(http_server.url("/f.bin"), path=str(dest), log=False, sha256_hash="0" * 64, retries=3)
    assert isinstance(info.value, DGLError) and isinstance(info.value, ValueError)
    assert info.value.path == str(dest)
    assert _leftovers(tmp_path) == []  # neither the file nor a .part
    assert route.requests == 1  # a mismatch is not retried


def test_checksum_mismatch_keeps_existing_file(http_server, tmp_path):
    http_server.add("/f.bin", BODY)
    dest = tmp_path / "f.bin"
    dest.write_bytes(b"previous good copy")
    with pytest.raises(DownloadError, match="left untouched"):
        U.download(http_server.url("/f.bin"), path=str(dest), log=False, sha1_hash="0" * 40)
    assert dest.read_bytes() == b"previous good copy"
    assert _leftovers(tmp_path) == ["f.bin"]


def test_interrupted_transfer_fails_cleanly(http_server, tmp_path):
    route = http_server.add("/big.bin", BODY, truncate_first=10)
    with pytest.raises(DownloadError, match=r"after 3 attempt\(s\).*interrupted"):
        U.download(http_server.url("/big.bin"), path=str(tmp_path / "big.bin"), log=False, retries=2, backoff=0)
    assert route.requests == 3
    assert _leftovers(tmp_path) == []


def test_interrupted_transfer_is_retried(http_server, tmp_path):
    route = http_server.add("/big.bin", BODY, truncate_first=1)
    U.download(http_server.url("/big.bin"), path=str(tmp_path / "big.bin"), log=False, retries=2, backoff=0,
               sha256_hash=hashlib.sha256(BODY).hexdigest())
    assert route.requests == 2
    assert (tmp_path / "big.bin").read_bytes() == BODY
    assert _leftovers(tmp_path) == ["big.bin"]


def test_server_error_is_retried_404_is_not(http_server, tmp_path):
    flaky = http_server.add("/flaky", b"ok", fail_first=2)
    U.download(http_server.url("/flaky"), path=str(tmp_path / "flaky"), log=False, retries=2, backoff=0)
    assert flaky.requests == 3 and (tmp_path / "flaky").read_bytes() == b"ok"
    missing = http_server.add("/gone", status=404)
    with pytest.raises(DownloadError, match="HTTP 404"):
        U.download(http_server.url("/gone"), path=str(tmp_path / "gone"), log=False, retries=4, backoff=0)
    assert missing.requests == 1
    assert not (tmp_path / "gone").exists()


def test_server_down_is_a_clear_error(refused_url, tmp_path):
    url = refused_url + "dataset/x.zip"
    with pytest.raises(DownloadError, match="cannot reach the server.*ConnectionRefused") as info:
        U.download(url, path=str(tmp_path / "x.zip"), log=False)
    assert info.value.url == url
    assert _leftovers(tmp_path) == []


def test_keyboard_interrupt_leaves_nothing(monkeypatch, tmp_path):
    def fake_fetch(url, tmp_file, *args):
        with open(tmp_file, "wb") as f:
            f.write(b"partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(U, "_fetch_once", fake_fetch)
    with pytest.raises(KeyboardInterrupt):
        U.download("http://127.0.0.1:1/x.bin", path=str(tmp_path / "x.bin"), log=False)
    assert _leftovers(tmp_path) == []


def test_offline_env_and_bad_arguments(monkeypatch, tmp_path):
    monkeypatch.setenv("MPGRAPH_OFFLINE", "1")
    with pytest.raises(DownloadError, match="MPGRAPH_OFFLINE"):
        U.download("http://127.0.0.1:1/x.bin", path=str(tmp_path / "x.bin"), log=False)
    with pytest.raises(DGLError, match="retries"):
        U.download("http://127.0.0.1:1/x.bin", path=str(tmp_path / "x.bin"), retries=-1)
    with pytest.raises(DGLError, match="file name"):
        U.download("http://127.0.0.1:1/")


def test_download_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("MPGRAPH_DOWNLOAD_DIR", str(tmp_path / "root"))
    assert U.get_download_dir() == str(tmp_path / "root")
    assert (tmp_path / "root").is_dir()
    monkeypatch.delenv("MPGRAPH_DOWNLOAD_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert U.get_download_dir() == str(tmp_path / "home" / ".mpgraph")
    monkeypatch.setenv("MPGRAPH_DATA_URL", "http://mirror.example/base")
    assert U._get_dgl_url("dataset/cora_v2.zip") == "http://mirror.example/base/dataset/cora_v2.zip"


def _zip_bytes(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_extract_zip_tar_gz(tmp_path):
    (tmp_path / "a.zip").write_bytes(_zip_bytes({"x.txt": "1", "sub/y.txt": "2"}))
    U.extract_archive(str(tmp_path / "a.zip"), str(tmp_path / "za"))
    assert (tmp_path / "za" / "x.txt").read_text() == "1" and (tmp_path / "za" / "sub" / "y.txt").read_text() == "2"
    # An existing target is left alone unless overwrite=True.
    (tmp_path / "b.zip").write_bytes(_zip_bytes({"x.txt": "new"}))
    U.extract_archive(str(tmp_path / "b.zip"), str(tmp_path / "za"))
    assert (tmp_path / "za" / "x.txt").read_text() == "1"
    U.extract_archive(str(tmp_path / "b.zip"), str(tmp_path / "za"), overwrite=True)
    assert (tmp_path / "za" / "x.txt").read_text() == "new" and (tmp_path / "za" / "sub").is_dir()

    src = tmp_path / "payload.txt"
    src.write_text("tar content")
    with tarfile.open(tmp_path / "c.tar.gz", "w:gz") as t:
        t.add(src, arcname="inner/payload.txt")
    U.extract_archive(str(tmp_path / "c.tar.gz"), str(tmp_path / "tc"))
    assert (tmp_path / "tc" / "inner" / "payload.txt").read_text() == "tar content"

    import gzip

    with gzip.open(tmp_path / "d.txt.gz", "wb") as g:
        g.write(b"gz content")
    U.extract_archive(str(tmp_path / "d.txt.gz"), str(tmp_path / "gd"))
    assert (tmp_path / "gd" / "d.txt").read_bytes() == b"gz content"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no staging dirs left


def test_extract_refuses_unsafe_members_and_unknown_types(tmp_path):
    (tmp_path / "evil.zip").write_bytes(_zip_bytes({"../escape.txt": "x"}))
    with pytest.raises(DGLError, match="inside the target directory"):
        U.extract_archive(str(tmp_path / "evil.zip"), str(tmp_path / "t"))
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "t").exists()
    (tmp_path / "x.rar").write_bytes(b"")
    with pytest.raises(DGLError, match="expected a .zip"):
        U.extract_archive(str(tmp_path / "x.rar"), str(tmp_path / "t"))
    assert [p.name for p in tmp_path.iterdir()] != [] and not any(p.name.startswith(".") for p in tmp_path.iterdir())


def test_masks_and_split_dataset():
    m = U.generate_mask_tensor(np.array([0, 1, 1, 0]))
    assert m.dtype == torch.bool and m.tolist() == [False, True, True, False]
    with pytest.raises(DGLError, match="numpy.ndarray"):
        U.generate_mask_tensor([0, 1])
    train, val, test = U.split_dataset(list(range(10)), [0.6, 0.2, 0.2], shuffle=True, random_state=0)
    assert (len(train), len(val), len(test)) == (6, 2, 2)
    assert sorted(list(train) + list(val) + list(test)) == list(range(10))
    with pytest.raises(DGLError, match="frac_list"):
        U.split_dataset(list(range(10)), [0.5, 0.2, 0.2])
