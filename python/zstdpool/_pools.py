"""What a pickled ``ContextPool`` becomes where it is unpickled.

A pool's contexts belong to its process, so a pool pickles as its settings. Unpickled, the
default pool is the receiving process's default pool, and a private pool is the receiving
process's pool with the same settings, made on first use and shared by every object unpickled
with them: tasks that carry a pool to a worker all lease from one warm pool there.
"""

from __future__ import annotations

import threading
from typing import Any

from zstdpool._zstdpool import ContextPool, default_pool

_pools: dict[tuple[tuple[str, Any], ...], ContextPool] = {}
_making = threading.Lock()


def pool_with(settings: dict[str, Any] | None) -> ContextPool:
    """The default pool for ``None``; otherwise this process's pool with ``settings`` (the
    keyword arguments of ``ContextPool``), made once."""
    if settings is None:
        return default_pool()
    key = tuple(sorted(settings.items()))
    with _making:
        found = _pools.get(key)
        if found is None:
            found = _pools[key] = ContextPool(**settings)
        return found
