"""The exceptions zstdpool raises, all under ``ZstdError``.

Errors about bad data or bad arguments are also ``ValueError``s, so code that already
catches ``ValueError`` keeps working. I/O errors from sinks and sources surface unchanged
(``OSError`` and whatever a file-like object raises).

Malformed Arrow IPC and Parquet data is also a ``pyarrow.ArrowInvalid``, as pyarrow raises
for it, so that ``except pa.ArrowInvalid:`` written for pyarrow catches zstdpool's readers'
errors too: ``IpcError`` and ``ParquetError``, and for a corrupt or oversized compressed body
inside such data the classes that are both (``IpcDecompressionError`` is an ``IpcError`` and
a ``DecompressionError``). Those classes derive from pyarrow's, so they are made on first
use: importing zstdpool for its codec alone does not import pyarrow.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any


class ZstdError(Exception):
    """Root of every exception zstdpool raises itself."""


class ParameterError(ZstdError, ValueError):
    """An invalid level, window size, codec name, limit or other option."""


class DecompressionError(ZstdError, ValueError):
    """Data that is not valid zstd (or lz4): corrupt, truncated or empty."""


class OutputLimitError(DecompressionError):
    """Output that would pass a size limit; refused before the memory is allocated."""


class CompressionError(ZstdError):
    """zstd failed while compressing (an internal error, not bad input)."""


class ClosedError(ZstdError, ValueError):
    """Use of a lease, writer or reader after ``close()``."""


class BusyError(ZstdError, RuntimeError):
    """A lease, writer or reader used from two threads at once; each is for one thread."""


#: The classes that derive from ``pyarrow.ArrowInvalid``, made by `_arrow_classes`.
_ARROW_CLASSES = (
    "IpcError",
    "IpcDecompressionError",
    "IpcOutputLimitError",
    "ParquetError",
    "ParquetDecompressionError",
    "ParquetOutputLimitError",
)


if TYPE_CHECKING:
    # What the type checker sees (pyarrow has no type information: ArrowInvalid is a
    # ValueError); at run time `_arrow_classes` makes them with ArrowInvalid as a base.
    class IpcError(ZstdError, ValueError): ...

    class IpcDecompressionError(IpcError, DecompressionError): ...

    class IpcOutputLimitError(IpcError, OutputLimitError): ...

    class ParquetError(ZstdError, ValueError): ...

    class ParquetDecompressionError(ParquetError, DecompressionError): ...

    class ParquetOutputLimitError(ParquetError, OutputLimitError): ...


def _arrow_classes() -> dict[str, type[ZstdError]]:
    import pyarrow as pa

    class IpcError(ZstdError, pa.ArrowInvalid):  # type: ignore[misc]
        """Malformed Arrow IPC data, or data that does not fit the writer (schema mismatch)."""

    class IpcDecompressionError(IpcError, DecompressionError):
        """A corrupt compressed buffer inside an Arrow IPC stream or file."""

    class IpcOutputLimitError(IpcError, OutputLimitError):
        """An Arrow IPC message or buffer that declares more than the reader's limits."""

    class ParquetError(ZstdError, pa.ArrowInvalid):  # type: ignore[misc]
        """Malformed or encrypted Parquet data, a type Parquet cannot hold, or data that does
        not fit the writer (schema mismatch)."""

    class ParquetDecompressionError(ParquetError, DecompressionError):
        """A corrupt compressed page inside a Parquet file."""

    class ParquetOutputLimitError(ParquetError, OutputLimitError):
        """A Parquet page that declares more than the reader's ``max_page_size``."""

    made: dict[str, type[ZstdError]] = {
        "IpcError": IpcError,
        "IpcDecompressionError": IpcDecompressionError,
        "IpcOutputLimitError": IpcOutputLimitError,
        "ParquetError": ParquetError,
        "ParquetDecompressionError": ParquetDecompressionError,
        "ParquetOutputLimitError": ParquetOutputLimitError,
    }
    for name, cls in made.items():
        cls.__module__ = __name__
        cls.__qualname__ = name
    return made


_making = threading.Lock()


def __getattr__(name: str) -> Any:
    if name not in _ARROW_CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Made once, under a lock: two threads making them at once would make two IpcErrors, and
    # one thread's `except IpcError` would miss the other's. After this, they are ordinary
    # module attributes and this function is not called for them again.
    with _making:
        if name not in globals():
            globals().update(_arrow_classes())
    return globals()[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ARROW_CLASSES))


__all__ = [
    "BusyError",
    "ClosedError",
    "CompressionError",
    "DecompressionError",
    "IpcDecompressionError",
    "IpcError",
    "IpcOutputLimitError",
    "OutputLimitError",
    "ParameterError",
    "ParquetDecompressionError",
    "ParquetError",
    "ParquetOutputLimitError",
    "ZstdError",
]
