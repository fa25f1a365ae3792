"""The dataset base classes: :class:`DGLDataset` and :class:`DGLBuiltinDataset`."""

import hashlib
import os
import sys
import tarfile
import traceback
import zipfile

from ..base import DGLError
from .utils import DownloadError, _get_dgl_url, download, extract_archive, get_download_dir, makedirs

__all__ = ["DGLDataset", "DGLBuiltinDataset"]


class DGLDataset:
    r"""The base class of graph datasets, with DGL's construction protocol.

    Construction runs these steps, which subclasses override:

    1. If not ``force_reload`` and :meth:`has_cache` is true, call :meth:`load`
       and stop (if ``load`` raises, fall through to step 2).
    2. If ``raw_path`` does not exist, create ``raw_dir`` and call
       :meth:`download`.
    3. Call :meth:`process`, then :meth:`save`.

    Parameters
    ----------
    name : str
        Name of the dataset.
    url : str, optional
        URL of the raw data. Default: ``None``.
    raw_dir : str, optional
        Directory that holds (or will receive) the raw data. Default:
        :func:`~mpgraph.data.utils.get_download_dir` (``$MPGRAPH_DOWNLOAD_DIR``,
        else ``~/.mpgraph``).
    save_dir : str, optional
        Directory for processed data. Default: ``raw_dir``.
    hash_key : tuple, optional
        Values that distinguish instances of one class (and their caches); see
        :attr:`hash`. Default: ``()``.
    force_reload : bool, optional
        Skip the cache and process again. Default: ``False``.
    verbose : bool, optional
        Print progress information. Default: ``False``.
    transform : callable, optional
        Applied to every item on access (``dataset[i]``). Default: ``None``.

    Attributes
    ----------
    url, name, raw_dir, raw_path, save_dir, save_path, verbose, hash
        See the properties of the same names.
    """

    def __init__(
        self,
        name,
        url=None,
        raw_dir=None,
        save_dir=None,
        hash_key=(),
        force_reload=False,
        verbose=False,
        transform=None,
    ):
        self._name = name
        self._url = url
        self._force_reload = force_reload
        self._verbose = verbose
        self._hash_key = hash_key
        self._hash = self._get_hash()
        self._transform = transform
        # Resolved on first use, so datasets that never read files never create ~/.mpgraph.
        self._raw_dir = None if raw_dir is None else os.path.abspath(os.path.expanduser(raw_dir))
        self._save_dir = None if save_dir is None else os.path.abspath(os.path.expanduser(save_dir))
        self._load()

    # -- hooks -------------------------------------------------------------------------------------------------
    def download(self):
        """Fetch the raw data into :attr:`raw_dir`. Default: do nothing."""

    def process(self):
        """Turn the raw data into graphs. Subclasses must override it."""
        raise NotImplementedError(f"{type(self).__name__} must implement process()")

    def save(self):
        """Write the processed data to :attr:`save_path`. Default: do nothing."""

    def load(self):
        """Read the processed data from :attr:`save_path`. Default: do nothing."""

    def has_cache(self):
        """Whether processed data is on disk for :meth:`load`. Default: ``False``."""
        return False

    # -- driver ------------------------------------------------------------------------------------------------
    def _download(self):
        if os.path.exists(self.raw_path):
            return
        makedirs(self.raw_dir)
        self.download()

    def _load(self):
        load_flag = not self._force_reload and self.has_cache()
        if load_flag:
            try:
                self.load()
                if self.verbose:
                    print("Done loading data from cached files.")
            except KeyboardInterrupt:
                raise
            except Exception:
                load_flag = False
                if self.verbose:
                    print(traceback.format_exc(), file=sys.stderr)
                    print("Loading from cache failed, re-processing.")
        if not load_flag:
            self._download()
            self.process()
            self.save()
            if self.verbose:
                print("Done processing the dataset.")

    def _get_hash(self):
        return hashlib.sha1(str(self._hash_key).encode("utf-8")).hexdigest()[:8]

    # -- properties --------------------------------------------------------------------------------------------
    @property
    def url(self):
        """URL of the raw data (``None`` when there is none)."""
        return self._url

    @property
    def name(self):
        """Name of the dataset."""
        return self._name

    @property
    def raw_dir(self):
        """Directory that holds the raw data (absolute)."""
        if self._raw_dir is None:
            self._raw_dir = get_download_dir()
        return self._raw_dir

    @property
    def raw_path(self):
        """Directory of this dataset's raw files: ``os.path.join(raw_dir, name)``."""
        return os.path.join(self.raw_dir, self.name)

    @property
    def save_dir(self):
        """Directory for processed data (absolute); ``raw_dir`` unless ``save_dir`` was given."""
        return self.raw_dir if self._save_dir is None else self._save_dir

    @property
    def save_path(self):
        """Path of this dataset's processed data: ``os.path.join(save_dir, name)``."""
        return os.path.join(self.save_dir, self.name)

    @property
    def verbose(self):
        """Whether progress information is printed."""
        return self._verbose

    @property
    def hash(self):
        """First 8 hex digits of the SHA-1 of ``str(hash_key)`` (``'f9065fa7'`` for ``()``, as DGL)."""
        return self._hash

    @property
    def num_classes(self):
        """Number of label classes; datasets with labels override it."""
        raise NotImplementedError(f"{type(self).__name__} does not define num_classes")

    def __getitem__(self, idx):
        """Return item ``idx``. Subclasses must override it."""
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self):
        """Return the number of items. Subclasses must override it."""
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def __repr__(self):
        return f'Dataset("{self.name}", num_graphs={len(self)}, save_path={self.save_path})'


class DGLBuiltinDataset(DGLDataset):
    r"""Base of mpgraph's built-in datasets: locate raw files, download, extract.

    A subclass lists the accepted layouts of its raw files in
    :meth:`_raw_layouts`: each layout maps a key (``"graph"``, ``"x"``, ...) to a
    path relative to :attr:`raw_dir`. The first layout whose files all exist is
    used and its absolute paths are kept in :attr:`raw_files`. If no file of any
    layout exists, :meth:`download` fetches ``url`` (a zip) to
    ``raw_dir/<name>.zip`` and extracts it to :attr:`raw_path`; an archive
    already at that path is used without network access. If only some files of a
    layout exist, or the download fails, one :class:`~mpgraph.base.DGLError`
    names the files and the directory to put them in.

    Parameters
    ----------
    name : str
        Name of the dataset (DGL's, e.g. ``"cora_v2"``).
    url : str
        URL of the zip archive.
    raw_dir : str, optional
        Directory that holds (or will receive) the raw data. Default:
        ``$MPGRAPH_DOWNLOAD_DIR`` or ``~/.mpgraph``.
    hash_key : tuple, optional
        See :class:`DGLDataset`. Default: ``()``.
    force_reload : bool, optional
        See :class:`DGLDataset`. Default: ``False``.
    verbose : bool, optional
        Print progress information. Default: ``False``.
    transform : callable, optional
        Applied to the graph on every access. Default: ``None``.
    """

    #: Where the raw files come from, for error messages.
    _source_hint = None

    def __init__(self, name, url, raw_dir=None, hash_key=(), force_reload=False, verbose=False, transform=None):
        self.raw_files = {}
        super().__init__(
            name,
            url=url,
            raw_dir=raw_dir,
            save_dir=None,
            hash_key=hash_key,
            force_reload=force_reload,
            verbose=verbose,
            transform=transform,
        )

    def _raw_layouts(self):
        """Return a list of ``{key: path relative to raw_dir}``, most preferred first."""
        raise NotImplementedError(f"{type(self).__name__} must implement _raw_layouts()")

    def download(self):
        """Download ``url`` to ``raw_dir/<name>.zip`` (unless present) and extract it to :attr:`raw_path`."""
        zip_file_path = os.path.join(self.raw_dir, self.name + ".zip")
        download(self.url, path=zip_file_path, overwrite=False, log=self.verbose)
        extract_archive(zip_file_path, self.raw_path, overwrite=True)

    def _resolve_layouts(self):
        """Return ``(best_layout, missing_keys)``: a complete layout, else the most complete one."""
        best, best_missing = None, None
        for layout in self._raw_layouts():
            missing = [k for k, rel in layout.items() if not os.path.isfile(os.path.join(self.raw_dir, rel))]
            if not missing:
                return layout, []
            if len(missing) < len(layout) and (best is None or len(missing) < len(best_missing)):
                best, best_missing = layout, missing
        return best, best_missing

    def _files_hint(self, layout):
        names = ", ".join(os.path.basename(rel) for rel in layout.values())
        source = f" They come from {self._source_hint}." if self._source_hint else ""
        return names, source

    def _download(self):
        layout, missing = self._resolve_layouts()
        if layout is not None and missing:
            directory = os.path.dirname(os.path.join(self.raw_dir, next(iter(layout.values()))))
            missing_names = ", ".join(os.path.basename(layout[k]) for k in missing)
            names, source = self._files_hint(layout)
            raise DGLError(
                f"{type(self).__name__}: expected all raw files {names} in {directory}, got "
                f"{len(layout) - len(missing)} of {len(layout)}; missing: {missing_names}. "
                f"Put the missing file(s) in {directory}, or pass raw_dir= a directory that holds all of them."
                f"{source}"
            )
        if layout is None:
            preferred = self._raw_layouts()[0]
            zip_path = os.path.join(self.raw_dir, self.name + ".zip")
            try:
                makedirs(self.raw_dir)
                self.download()
            except (zipfile.BadZipFile, tarfile.TarError, EOFError) as err:
                raise DGLError(
                    f"{type(self).__name__}: expected a valid archive at {zip_path}, got a corrupt one ({err}); "
                    "delete it to download again, or replace it with a good copy"
                ) from err
            except (DownloadError, OSError) as err:
                names, source = self._files_hint(preferred)
                raise DGLError(
                    f"{type(self).__name__}: raw files not found under {self.raw_dir} and the download failed "
                    f"({err}). Either place {names} in {self.raw_path} (or directly in {self.raw_dir}), "
                    f"or put the archive {self.url} at {zip_path}, or pass raw_dir= a directory that holds "
                    f"the files.{source}"
                ) from err
            layout, missing = self._resolve_layouts()
            if layout is None or missing:
                names, _ = self._files_hint(preferred)
                raise DGLError(
                    f"{type(self).__name__}: expected the archive from {self.url} to contain {names}, but they "
                    f"are not under {self.raw_path} after extraction; delete {self.raw_path} and the .zip beside "
                    "it to download again."
                )
        self.raw_files = {k: os.path.join(self.raw_dir, rel) for k, rel in layout.items()}

    def _check_index(self, idx):
        if idx not in (0, -1):
            raise IndexError(f"expected index 0, got {idx!r}: {type(self).__name__} holds one graph")

    def __getitem__(self, idx):
        """Return the graph (``idx`` must be 0), passed through ``transform`` if one was given."""
        self._check_index(idx)
        g = self._g
        return g if self._transform is None else self._transform(g)

    def __len__(self):
        """Number of graphs: 1."""
        return 1

    def _print_info(self):
        if not self.verbose:
            return
        g = self._g
        print(f"  NumNodes: {g.num_nodes()}")
        print(f"  NumEdges: {g.num_edges()}")
        if "feat" in g.ndata:
            print(f"  NumFeats: {g.ndata['feat'].shape[-1]}")
        print(f"  NumClasses: {self.num_classes}")
        for key, label in (("train_mask", "Training"), ("val_mask", "Validation"), ("test_mask", "Test")):
            if key in g.ndata:
                print(f"  Num{label}Samples: {int(g.ndata[key].sum())}")


class _DGLArchiveDataset(DGLBuiltinDataset):
    """Base of the built-in datasets whose archive is ``dataset/<name>.zip`` on DGL's server.

    The constructor takes the arguments of :class:`DGLBuiltinDataset` except
    ``url``, which it derives from ``name`` (honouring ``MPGRAPH_DATA_URL``), and
    ``hash_key``. A subclass that accepts a fixed set of names lists them as the
    keys of ``_upstream`` (DGL's name -> upstream name); any other ``name``
    raises :class:`~mpgraph.base.DGLError`.
    """

    #: Accepted names (DGL's) -> upstream names; ``None`` accepts any name.
    _upstream = None

    def __init__(self, name, raw_dir=None, force_reload=False, verbose=False, transform=None):
        if self._upstream is not None and name not in self._upstream:
            raise DGLError(f"expected one of {sorted(self._upstream)}, got {name!r}")
        super().__init__(
            name,
            url=_get_dgl_url(f"dataset/{name}.zip"),
            raw_dir=raw_dir,
            force_reload=force_reload,
            verbose=verbose,
            transform=transform,
        )


class _GeneratedDataset(DGLDataset):
    """Base of one-graph datasets generated in memory: no download, no files, no cache."""

    def _download(self):
        """Nothing to download: the graph is generated."""

    def __getitem__(self, idx):
        """Return the graph (``idx`` must be 0), passed through ``transform`` if one was given."""
        if idx not in (0, -1):
            raise IndexError(f"expected index 0, got {idx!r}: {type(self).__name__} holds one graph")
        return self._g if self._transform is None else self._transform(self._g)

    def __len__(self):
        """Number of graphs: 1."""
        return 1

    def __repr__(self):
        return f'Dataset("{self.name}", num_graphs=1, hash={self.hash})'
