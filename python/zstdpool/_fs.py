"""Where a path argument points: a local path, or an object store reached natively.

Writers and readers take ``filesystem=`` and ``storage_options=`` as pyarrow and polars take
them. This module turns both into what the Rust side opens: a local path (for a pyarrow or
fsspec local filesystem, a ``SubTreeFileSystem`` over one, or a ``file://`` URI), or an
``s3://`` / ``gs://`` URL with ``storage_options`` (requests issued from Rust, without the
GIL). Other filesystems are refused with a message that says so.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request
from typing import Any, TypeGuard

# URL schemes opened natively (object_store's S3 and GCS clients).
STORE_SCHEMES = ("s3://", "s3a://", "gs://", "gcs://")


def is_store_url(target: object) -> TypeGuard[str]:
    """Whether ``target`` is an object store URL zstdpool opens itself."""
    return isinstance(target, str) and target[:6].lower().startswith(STORE_SCHEMES)


def _local_base(filesystem: Any) -> str | None:
    """The local directory ``filesystem`` reads paths relative to ("" for the root), or None
    when it is not a local filesystem."""
    kind = type(filesystem)
    module = kind.__module__ or ""
    if module.startswith("pyarrow"):
        import pyarrow.fs as pafs

        if isinstance(filesystem, pafs.LocalFileSystem):
            return ""
        if isinstance(filesystem, pafs.SubTreeFileSystem):
            inner = _local_base(filesystem.base_fs)
            return None if inner is None else os.path.join(inner, filesystem.base_path)
        return None
    protocol = getattr(filesystem, "protocol", None)
    protocols = (protocol,) if isinstance(protocol, str) else tuple(protocol or ())
    if module.startswith("fsspec") and ("file" in protocols or "local" in protocols):
        return ""
    return None


def _one(target: Any, filesystem: Any, argument: str) -> Any:
    if filesystem is not None:
        base = _local_base(filesystem)
        if base is None:
            raise NotImplementedError(
                f"filesystem: a '{type(filesystem).__name__}' is not supported yet; pass "
                f"{argument} as an s3:// or gs:// URL with storage_options (reached natively), "
                f"or as a local path"
            )
        if is_store_url(target):
            raise ValueError(f"{argument} is a URL ({target!r}) and a filesystem was given too")
        path = os.fspath(target)
        return os.path.join(base, path) if base else path
    if isinstance(target, str) and "://" in target[:16] and not is_store_url(target):
        scheme = target.split("://", 1)[0].lower()
        if scheme == "file":
            parsed = urllib.parse.urlparse(target)
            return urllib.request.url2pathname(parsed.path)
        raise NotImplementedError(
            f"{argument}: {scheme}:// is not supported yet; s3:// and gs:// are opened natively "
            f"(with storage_options), and file:// and local paths are local"
        )
    return target


def resolve(
    target: Any, filesystem: Any, storage_options: dict[str, Any] | None, argument: str
) -> tuple[Any, dict[str, Any] | None]:
    """``target`` (a path, URL, or list of them) resolved against ``filesystem``, and the
    ``storage_options`` that go with it (checked on the Rust side: they apply to URLs only)."""
    if storage_options is not None and not isinstance(storage_options, dict):
        raise TypeError(f"storage_options must be a dict, not '{type(storage_options).__name__}'")
    if isinstance(target, (list, tuple)):
        return [_one(t, filesystem, argument) for t in target], storage_options
    return _one(target, filesystem, argument), storage_options
