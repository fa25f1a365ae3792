"""Download, checksum, extraction and mask helpers for :mod:`mpgraph.data`.

Downloads use :mod:`urllib` only (no ``requests``). Every file is written to a
temporary ``.part`` file beside its destination and moved into place with
:func:`os.replace` only after its size and checksum are verified, so a failed or
interrupted download never leaves a half-written file under the final name.

Environment variables
---------------------
``MPGRAPH_DOWNLOAD_DIR``
    Root for downloaded and processed datasets. Default ``~/.mpgraph``.
``MPGRAPH_DATA_URL``
    Base URL of the dataset server. Default ``https://data.dgl.ai/`` (DGL's).
``MPGRAPH_OFFLINE``
    When ``1``, :func:`download` fails at once instead of touching the network.
"""

import hashlib
import http.client
import os
import shutil
import socket
import ssl
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
import zipfile

import numpy as np
import torch

from ..base import DGLError

__all__ = [
    "DownloadError",
    "download",
    "check_sha1",
    "check_sha256",
    "extract_archive",
    "get_download_dir",
    "makedirs",
    "generate_mask_tensor",
    "Subset",
    "split_dataset",
]

_DEFAULT_DATA_URL = "https://data.dgl.ai/"
_CHUNK = 1 << 20  # bytes read per network / disk read
# HTTP statuses worth retrying: timeouts, rate limits and server-side failures.
_RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class DownloadError(DGLError):
    """A download failed: unreachable server, HTTP error, short body or checksum mismatch.

    It is a :class:`~mpgraph.base.DGLError` (so also a :class:`ValueError`).
    Attributes ``url`` and ``path`` name what was being fetched and where to.
    """

    def __init__(self, message, url=None, path=None):
        super().__init__(message)
        self.url = url
        self.path = path


def _get_dgl_url(file_url):
    """Return ``MPGRAPH_DATA_URL`` (default DGL's server) joined with ``file_url``."""
    repo_url = os.environ.get("MPGRAPH_DATA_URL", _DEFAULT_DATA_URL)
    if not repo_url.endswith("/"):
        repo_url += "/"
    return repo_url + file_url


def get_download_dir():
    """Return the root directory for datasets, creating it if needed.

    Returns
    -------
    str
        ``$MPGRAPH_DOWNLOAD_DIR`` if set, else ``~/.mpgraph``; absolute.
    """
    default_dir = os.path.join(os.path.expanduser("~"), ".mpgraph")
    dirname = os.path.abspath(os.path.expanduser(os.environ.get("MPGRAPH_DOWNLOAD_DIR", default_dir)))
    makedirs(dirname)
    return dirname


def makedirs(path):
    """Create ``path`` and its parents; do nothing if it already is a directory.

    Parameters
    ----------
    path : str
        Directory to create (``~`` is expanded).

    Raises
    ------
    OSError
        If ``path`` exists as a file or cannot be created.
    """
    os.makedirs(os.path.expanduser(os.path.normpath(path)), exist_ok=True)


def _file_hexdigest(filename, algorithm):
    h = hashlib.new(algorithm)
    with open(filename, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def check_sha1(filename, sha1_hash):
    """Return whether the SHA-1 of the file's content equals ``sha1_hash``.

    Parameters
    ----------
    filename : str
        Path to the file.
    sha1_hash : str
        Expected SHA-1 in hexadecimal (case-insensitive).

    Returns
    -------
    bool
    """
    return _file_hexdigest(filename, "sha1") == sha1_hash.lower()


def check_sha256(filename, sha256_hash):
    """Return whether the SHA-256 of the file's content equals ``sha256_hash``.

    Parameters
    ----------
    filename : str
        Path to the file.
    sha256_hash : str
        Expected SHA-256 in hexadecimal (case-insensitive).

    Returns
    -------
    bool
    """
    return _file_hexdigest(filename, "sha256") == sha256_hash.lower()


def _expected_digests(sha1_hash, sha256_hash):
    out = []
    if sha1_hash is not None:
        out.append(("sha1", sha1_hash.lower()))
    if sha256_hash is not None:
        out.append(("sha256", sha256_hash.lower()))
    return out


def _matches(filename, digests):
    return all(_file_hexdigest(filename, algo) == want for algo, want in digests)


class _Retryable(Exception):
    """Internal: an attempt failed in a way another attempt may fix."""


def _fetch_once(url, tmp_path, fname, timeout, context, log):
    """Stream ``url`` into ``tmp_path``; raise :class:`_Retryable` or :class:`DownloadError`."""
    request = urllib.request.Request(url, headers={"User-Agent": "mpgraph"})
    try:
        response = urllib.request.urlopen(request, timeout=timeout, context=context)
    except urllib.error.HTTPError as err:
        if err.code in _RETRY_STATUS:
            raise _Retryable(f"HTTP {err.code} {err.reason}") from err
        raise DownloadError(
            f"failed to download {url} to {fname}: HTTP {err.code} {err.reason}; check the URL "
            "(MPGRAPH_DATA_URL sets the server)", url=url, path=fname) from err
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:  # refused, DNS, timeout, TLS
        reason = getattr(err, "reason", err)
        if isinstance(reason, (ConnectionRefusedError, socket.gaierror)):
            # Offline, or no server there: retrying would only delay the message.
            raise DownloadError(
                f"failed to download {url} to {fname}: cannot reach the server "
                f"({type(reason).__name__}: {reason}); check the network or MPGRAPH_DATA_URL",
                url=url, path=fname) from err
        raise _Retryable(f"{type(reason).__name__}: {reason}") from err

    from tqdm.auto import tqdm

    with response:
        length = response.headers.get("Content-Length")
        total = int(length) if length is not None and length.isdigit() else None
        received = 0
        with open(tmp_path, "wb") as out, tqdm(
            total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=os.path.basename(fname),
            disable=not log, leave=False,
        ) as bar:
            try:
                while True:
                    block = response.read(_CHUNK)
                    if not block:
                        break
                    out.write(block)
                    received += len(block)
                    bar.update(len(block))
            except (OSError, ValueError, http.client.HTTPException) as err:  # reset / IncompleteRead mid-body
                raise _Retryable(f"transfer interrupted after {received} bytes: {err!r}") from err
    if total is not None and received != total:
        raise _Retryable(f"transfer interrupted: expected {total} bytes, got {received}")
    return received


def download(
    url,
    path=None,
    overwrite=True,
    sha1_hash=None,
    retries=5,
    verify_ssl=True,
    log=True,
    sha256_hash=None,
    timeout=30.0,
    backoff=1.0,
):
    """Download ``url`` to a local file, atomically and with retries.

    The body is streamed to a temporary ``<name>.*.part`` file in the destination
    directory (with a tqdm progress bar when ``log``), checked against the
    ``Content-Length`` header and the given checksums, and only then moved to the
    destination with :func:`os.replace`. On any failure, or on
    ``KeyboardInterrupt``, the temporary file is deleted, so the destination is
    either the complete, verified file or untouched.

    Timeouts, connection resets, HTTP 408/425/429/5xx and truncated bodies are
    retried after ``backoff * 2**attempt`` seconds (capped at 30 s). A refused
    connection or an unresolvable host (offline), other HTTP errors (404,
    403, ...) and checksum mismatches fail at once.

    Parameters
    ----------
    url : str
        URL to fetch (``http``, ``https`` or ``file``).
    path : str, optional
        Destination file, or an existing directory to put ``basename(url)`` in.
        Default: ``basename(url)`` in the current directory.
    overwrite : bool, optional
        Download even if the destination exists. Default: ``True``. With
        ``False`` an existing file is kept when it matches the given checksums
        (or when none are given).
    sha1_hash : str, optional
        Expected SHA-1 (hex) of the content. Default: not checked.
    retries : int, optional
        Extra attempts after the first. Default: 5.
    verify_ssl : bool, optional
        Verify TLS certificates. Default: ``True``. ``False`` warns, as DGL does.
    log : bool, optional
        Print the source and show a progress bar. Default: ``True``.
    sha256_hash : str, optional
        Expected SHA-256 (hex) of the content. Default: not checked.
    timeout : float, optional
        Socket timeout in seconds for connecting and for each read. Default: 30.
    backoff : float, optional
        Base of the exponential wait between attempts, in seconds. Default: 1.

    Returns
    -------
    str
        Path of the downloaded file.

    Raises
    ------
    DownloadError
        If every attempt fails, on a non-retryable HTTP error, on a checksum
        mismatch, or when ``MPGRAPH_OFFLINE=1``. The message names the URL, the
        destination and the last cause.
    DGLError
        If ``path`` is ``None`` and the URL has no file name, or ``retries < 0``.
    """
    url_name = os.path.basename(urllib.parse.urlparse(url).path)
    if path is None or os.path.isdir(os.path.expanduser(path)):
        if not url_name:
            raise DGLError(f"expected a URL ending in a file name, got {url!r}; pass path= to name the file")
        fname = url_name if path is None else os.path.join(os.path.expanduser(path), url_name)
    else:
        fname = os.path.expanduser(path)
    if not isinstance(retries, int) or retries < 0:
        raise DGLError(f"expected retries to be an int >= 0, got {retries!r}")
    context = None
    if not verify_ssl:
        warnings.warn("Unverified HTTPS request is being made (verify_ssl=False); "
                      "certificate verification is strongly advised.", stacklevel=2)
        context = ssl._create_unverified_context()
    digests = _expected_digests(sha1_hash, sha256_hash)
    fname = os.path.abspath(fname)

    if not overwrite and os.path.isfile(fname) and (not digests or _matches(fname, digests)):
        return fname
    if os.environ.get("MPGRAPH_OFFLINE", "0") not in ("", "0"):
        raise DownloadError(f"not downloading {url} to {fname}: MPGRAPH_OFFLINE is set", url=url, path=fname)

    dirname = os.path.dirname(fname)
    makedirs(dirname)
    if log:
        print(f"Downloading {fname} from {url}...", file=sys.stderr)
    last_error = None
    for attempt in range(retries + 1):
        fd, tmp_path = tempfile.mkstemp(prefix="." + os.path.basename(fname) + ".", suffix=".part", dir=dirname)
        os.close(fd)
        try:
            _fetch_once(url, tmp_path, fname, timeout, context, log)
            for algo, want in digests:
                got = _file_hexdigest(tmp_path, algo)
                if got != want:
                    raise DownloadError(
                        f"checksum mismatch for {url}: expected {algo} {want}, got {got}; the file was discarded "
                        f"and {fname} left untouched. The server copy may have changed or the transfer was corrupted; "
                        "check MPGRAPH_DATA_URL, or place a verified copy at that path yourself.",
                        url=url,
                        path=fname,
                    )
            os.replace(tmp_path, fname)
            return fname
        except _Retryable as err:
            last_error = err
            if attempt < retries:
                wait = min(backoff * (2**attempt), 30.0)
                if log:
                    print(f"download failed ({err}); retrying in {wait:.1f}s, "
                          f"{retries - attempt} attempt(s) left", file=sys.stderr)
                time.sleep(wait)
        finally:
            if os.path.exists(tmp_path):
                os.remove(tmp_path)
    raise DownloadError(
        f"failed to download {url} to {fname} after {retries + 1} attempt(s): {last_error}", url=url, path=fname
    ) from last_error


def _safe_member_path(target_dir, name):
    dest = os.path.realpath(os.path.join(target_dir, name))
    root = os.path.realpath(target_dir)
    if dest != root and not dest.startswith(root + os.sep):
        raise DGLError(f"expected archive members inside the target directory, got {name!r}; refusing to extract")
    return dest


def extract_archive(file, target_dir, overwrite=False):
    """Extract a ``.zip``, ``.tar``, ``.tar.gz``/``.tgz`` or ``.gz`` archive.

    Members are extracted into a temporary sibling directory first and moved into
    ``target_dir`` only when extraction succeeded. Members whose path would leave
    ``target_dir`` (absolute paths, ``..``) are refused.

    Parameters
    ----------
    file : str
        Path of the archive.
    target_dir : str
        Directory to extract into. For ``.gz`` (single file), the output is
        ``target_dir/<archive name without .gz>``.
    overwrite : bool, optional
        Extract even if ``target_dir`` exists, replacing same-named entries.
        Default: ``False`` (an existing ``target_dir`` is left as it is).

    Raises
    ------
    DGLError
        If the file type is not recognised or a member path is unsafe.
    """
    if os.path.exists(target_dir) and not overwrite:
        return
    parent = os.path.dirname(os.path.abspath(target_dir))
    makedirs(parent)
    staging = tempfile.mkdtemp(prefix="." + os.path.basename(os.path.abspath(target_dir)) + ".", dir=parent)
    try:
        lower = file.lower()
        if lower.endswith((".tar.gz", ".tgz", ".tar", ".tar.bz2", ".tar.xz")):
            with tarfile.open(file, "r:*") as archive:
                for member in archive.getmembers():
                    _safe_member_path(staging, member.name)
                archive.extractall(path=staging, filter="data")
        elif lower.endswith(".zip"):
            with zipfile.ZipFile(file, "r") as archive:
                for name in archive.namelist():
                    _safe_member_path(staging, name)
                archive.extractall(path=staging)
        elif lower.endswith(".gz"):
            import gzip

            out_name = os.path.basename(file)[:-3]
            with gzip.open(file, "rb") as f_in, open(os.path.join(staging, out_name), "wb") as f_out:
                shutil.copyfileobj(f_in, f_out)
        else:
            raise DGLError(f"expected a .zip, .tar, .tar.gz, .tgz or .gz archive, got {file!r}")
        if not os.path.exists(target_dir):
            os.replace(staging, target_dir)
            return
        for entry in os.listdir(staging):
            dest = os.path.join(target_dir, entry)
            if os.path.isdir(dest) and not os.path.islink(dest):
                shutil.rmtree(dest)
            elif os.path.lexists(dest):
                os.remove(dest)
            os.replace(os.path.join(staging, entry), dest)
    finally:
        if os.path.exists(staging):
            shutil.rmtree(staging, ignore_errors=True)


def generate_mask_tensor(mask):
    """Return a boolean tensor from a 0/1 or boolean numpy array.

    Parameters
    ----------
    mask : numpy.ndarray
        Shape ``(N,)`` or ``(N, K)``.

    Returns
    -------
    torch.Tensor
        ``torch.bool`` tensor of the same shape.
    """
    if not isinstance(mask, np.ndarray):
        raise DGLError(f"expected a numpy.ndarray mask, got {type(mask).__name__}")
    return torch.from_numpy(np.ascontiguousarray(mask != 0))


class Subset:
    """The items of ``dataset`` at ``indices``, as DGL's ``Subset``.

    Parameters
    ----------
    dataset
        Any object with ``__getitem__``.
    indices : sequence of int
        Indices into ``dataset``.
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, item):
        return self.dataset[self.indices[item]]

    def __len__(self):
        return len(self.indices)


def split_dataset(dataset, frac_list=None, shuffle=False, random_state=None):
    """Split a dataset into train, validation and test :class:`Subset` s.

    Parameters
    ----------
    dataset
        Any object with ``__len__`` and ``__getitem__``.
    frac_list : list of 3 floats, optional
        Fractions for train, validation and test; must sum to 1. Default
        ``[0.8, 0.1, 0.1]``.
    shuffle : bool, optional
        Permute before splitting. Default: ``False`` (consecutive split).
    random_state : int, optional
        Seed of the permutation. Default: ``None``.

    Returns
    -------
    list of Subset
        Three subsets; the last takes the rounding remainder.

    Raises
    ------
    DGLError
        If ``frac_list`` does not have 3 non-negative entries summing to 1.
    """
    frac = np.asarray([0.8, 0.1, 0.1] if frac_list is None else frac_list, dtype=np.float64)
    if frac.shape != (3,) or (frac < 0).any() or not np.isclose(frac.sum(), 1.0):
        raise DGLError(f"expected frac_list of 3 non-negative fractions summing to 1, got {frac_list!r}")
    num_data = len(dataset)
    lengths = (num_data * frac).astype(np.int64)
    lengths[-1] = num_data - lengths[:-1].sum()
    indices = np.random.RandomState(random_state).permutation(num_data) if shuffle else np.arange(num_data)
    offsets = np.cumsum(lengths)
    return [Subset(dataset, indices[end - n : end]) for end, n in zip(offsets, lengths)]
