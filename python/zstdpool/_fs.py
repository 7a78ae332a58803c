"""Where a path argument points: a local path, an object store reached natively, or a
filesystem object reached through its own API.

Writers and readers take ``filesystem=`` and ``storage_options=`` as pyarrow and polars take
them. This module turns both into what the Rust side opens:

- a local path, for a pyarrow or fsspec local filesystem, a ``SubTreeFileSystem`` over one,
  or a ``file://`` URI (written through the core's path sinks, atomically);
- an ``s3://`` / ``gs://`` URL with ``storage_options`` (requests issued from Rust, without
  the GIL);
- a ``FileSystemPath``, for any other pyarrow filesystem, an fsspec filesystem (wrapped in
  pyarrow's ``PyFileSystem(FSSpecHandler(...))``), or a URI that pyarrow or fsspec resolves
  to one ("memory://", "hdfs://", ...). The core calls its ``FileSystemAdapter`` for each
  file it creates, reads, lists or deletes; each call takes the GIL.
"""

from __future__ import annotations

import os
import threading
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING, Any, TypeGuard

from zstdpool._zstdpool import _STORE_SCHEMES

if TYPE_CHECKING:
    import pyarrow.fs as pafs

# URL schemes opened natively (object_store's S3 and GCS clients), as the core lists them.
STORE_SCHEMES: tuple[str, ...] = _STORE_SCHEMES


def is_store_url(target: object) -> TypeGuard[str]:
    """Whether ``target`` is an object store URL zstdpool opens itself."""
    return isinstance(target, str) and target[:6].lower().startswith(STORE_SCHEMES)


def local_base(filesystem: Any) -> str | None:
    """The local directory ``filesystem`` reads paths relative to ("" for the root), or None
    when it is not a local filesystem."""
    kind = type(filesystem)
    module = kind.__module__ or ""
    if module.startswith("pyarrow"):
        import pyarrow.fs as pafs

        if isinstance(filesystem, pafs.LocalFileSystem):
            return ""
        if isinstance(filesystem, pafs.SubTreeFileSystem):
            inner = local_base(filesystem.base_fs)
            return None if inner is None else os.path.join(inner, filesystem.base_path)
        return None
    protocol = getattr(filesystem, "protocol", None)
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    if module.startswith("fsspec") and ("file" in protocols or "local" in protocols):
        return ""
    return None


class FileSystemAdapter:
    """The calls the core makes on a filesystem object (see ``core/src/store/blocking.rs``):
    keys are paths below ``root`` ("/" for a filesystem of absolute paths, "" for one whose
    paths start with a bucket, as pyarrow's S3FileSystem's do)."""

    def __init__(self, filesystem: pafs.FileSystem, root: str) -> None:
        self.filesystem = filesystem
        self.root = root
        self._made: set[str] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"{type(self.filesystem).__name__}({self.root!r})"

    def _path(self, key: str) -> str:
        return self.root + key

    def create(self, key: str) -> Any:
        """An output stream for the file ``key``, its directory made first (once)."""
        parent = key.rpartition("/")[0]
        if parent:
            with self._lock:
                made = parent in self._made
            if not made:
                self.filesystem.create_dir(self._path(parent), recursive=True)
                with self._lock:
                    self._made.add(parent)
        return self.filesystem.open_output_stream(self._path(key))

    def read(self, key: str, start: int | None, end: int | None) -> tuple[bytes, int]:
        """The bytes ``start:end`` of the file ``key`` (all of it for None), and its size."""
        with self.filesystem.open_input_file(self._path(key)) as f:
            size = f.size()
            if start is None or end is None:
                return f.read(), size
            end = min(end, size)
            return (f.read_at(end - start, start) if end > start else b""), size

    def size(self, key: str) -> int:
        import pyarrow.fs as pafs

        info = self.filesystem.get_file_info(self._path(key))
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(2, "No such file or directory", self._path(key))
        if info.type != pafs.FileType.File:
            raise IsADirectoryError(21, "Is a directory", self._path(key))
        return int(info.size)

    def list(self, prefix: str) -> list[tuple[str, int]]:
        """The files below the directory ``prefix``, at any depth: keys and sizes."""
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._path(prefix), recursive=True, allow_not_found=True)
        try:
            infos = self.filesystem.get_file_info(selector)
        except NotADirectoryError:
            return []
        return [(i.path.lstrip("/"), int(i.size)) for i in infos if i.type == pafs.FileType.File]

    def delete(self, key: str) -> None:
        try:
            self.filesystem.delete_file(self._path(key))
        except FileNotFoundError:
            pass

    def copy(self, source: str, destination: str) -> None:
        self.filesystem.copy_file(self._path(source), self._path(destination))


class FileSystemPath:
    """A path (or a list of paths) of a filesystem object: what the Rust side opens as a store
    over ``adapter``, at ``keys``."""

    def __init__(self, filesystem: pafs.FileSystem, path: str | list[str]) -> None:
        paths = path if isinstance(path, list) else [path]
        root = "/" if paths and paths[0].startswith("/") else ""
        self.adapter = FileSystemAdapter(filesystem, root)
        keys = [p.strip("/") for p in paths]
        self.keys: str | list[str] = keys if isinstance(path, list) else keys[0]

    def __repr__(self) -> str:
        return f"{self.adapter!r}:{self.keys!r}"


def as_pyarrow_filesystem(filesystem: Any) -> pafs.FileSystem | None:
    """``filesystem`` as a pyarrow filesystem (an fsspec one wrapped in pyarrow's handler), or
    None when it is neither."""
    import pyarrow.fs as pafs

    if isinstance(filesystem, pafs.FileSystem):
        return filesystem
    try:
        import fsspec
    except ImportError:
        return None
    if isinstance(filesystem, fsspec.AbstractFileSystem):
        return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
    return None


def filesystem_of_uri(uri: str) -> pafs.FileSystem:
    """A filesystem given as a URI, as pyarrow takes one: the filesystem pyarrow resolves it
    to, rooted at the URI's path (``"file:///data"`` is the local directory /data)."""
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(uri)
    return pafs.SubTreeFileSystem(path, fs) if path else fs


def _filesystem_path(filesystem: Any, target: Any, argument: str) -> FileSystemPath:
    fs = as_pyarrow_filesystem(filesystem)
    if fs is None:
        raise TypeError(
            f"filesystem must be a pyarrow.fs.FileSystem or an fsspec filesystem, not "
            f"'{type(filesystem).__name__}'"
        )

    def one(t: Any) -> str:
        if not isinstance(t, (str, os.PathLike)):
            raise TypeError(
                f"{argument} must be a path of the filesystem (str), not {type(t).__name__}"
            )
        p = os.fspath(t)
        if not isinstance(p, str):
            raise TypeError(f"{argument} must be a str path, not bytes")
        return str(fs.normalize_path(p))

    if isinstance(target, (list, tuple)):
        return FileSystemPath(fs, [one(t) for t in target])
    return FileSystemPath(fs, one(target))


def _from_uri(uri: str, storage_options: dict[str, Any] | None, argument: str) -> Any:
    """The filesystem and path a URI names, as pyarrow resolves it, or else as fsspec does
    (with ``storage_options``)."""
    import pyarrow.fs as pafs

    if not storage_options:
        try:
            fs, path = pafs.FileSystem.from_uri(uri)
        except ValueError:  # pyarrow's ArrowInvalid: a scheme it does not know
            pass
        else:
            return fs, path
    try:
        import fsspec
    except ImportError:
        raise ValueError(
            f"{argument}: pyarrow does not resolve {uri!r}, and fsspec, which might, is not "
            f"installed"
        ) from None
    try:
        fs, path = fsspec.core.url_to_fs(uri, **(storage_options or {}))
    except (ValueError, ImportError) as e:
        raise ValueError(f"{argument}: neither pyarrow nor fsspec resolves {uri!r}: {e}") from e
    return fs, path


def _refuse_uri_with_filesystem(target: Any, argument: str) -> None:
    """A URI names its own filesystem: with ``filesystem=`` as well, one of them is wrong."""
    if is_store_url(target) or (isinstance(target, str) and "://" in target[:16]):
        raise ValueError(f"{argument} is a URI ({target!r}) and a filesystem was given too")


def _one(target: Any, filesystem: Any, storage_options: Any, argument: str) -> Any:
    if filesystem is not None:
        base = local_base(filesystem)
        _refuse_uri_with_filesystem(target, argument)
        if base is None:
            if storage_options:
                raise ValueError(
                    "storage_options are for URLs; a filesystem object is configured when it "
                    "is made"
                )
            return _filesystem_path(filesystem, target, argument)
        path = os.fspath(target)
        return os.path.join(base, path) if base else path
    if isinstance(target, str) and "://" in target[:16] and not is_store_url(target):
        scheme = target.split("://", 1)[0].lower()
        if scheme == "file":
            parsed = urllib.parse.urlparse(target)
            return urllib.request.url2pathname(parsed.path)
        fs, path = _from_uri(target, storage_options, argument)
        if local_base(fs) == "":
            return path
        return _filesystem_path(fs, path, argument)
    return target


def resolve(
    target: Any, filesystem: Any, storage_options: dict[str, Any] | None, argument: str
) -> tuple[Any, dict[str, Any] | None]:
    """``target`` (a path, URL, or list of them) resolved against ``filesystem``, and the
    ``storage_options`` that go with it (checked on the Rust side: they apply to store URLs
    only, and a URI resolved by fsspec used them already)."""
    if storage_options is not None and not isinstance(storage_options, dict):
        raise TypeError(f"storage_options must be a dict, not {type(storage_options).__name__}")
    if isinstance(filesystem, str):
        filesystem = filesystem_of_uri(filesystem)
    if isinstance(target, (list, tuple)):
        if filesystem is not None and local_base(filesystem) is None:
            # One path object for the list, so each item is checked here (`_one` checks the
            # items of a local filesystem's list one by one below).
            for t in target:
                _refuse_uri_with_filesystem(t, argument)
            return _one(list(target), filesystem, storage_options, argument), None
        items = [_one(t, filesystem, storage_options, argument) for t in target]
        remote = [i for i in items if isinstance(i, FileSystemPath)]
        if not remote:
            return items, storage_options
        # URIs of one filesystem (fsspec keeps one instance per protocol and options; pyarrow's
        # compare equal): one store over it, with every path.
        first = remote[0].adapter.filesystem
        if len(remote) != len(items) or any(r.adapter.filesystem != first for r in remote):
            raise ValueError(f"{argument}: every URI of the list must be of one filesystem")
        paths = [r.adapter.root + str(r.keys) for r in remote]
        return FileSystemPath(first, paths), None
    resolved = _one(target, filesystem, storage_options, argument)
    if isinstance(resolved, FileSystemPath) or (
        isinstance(target, str) and "://" in target[:16] and not is_store_url(target)
    ):
        # Used to make the filesystem (fsspec's), or not taken: nothing is left to apply.
        storage_options = None
    return resolved, storage_options
