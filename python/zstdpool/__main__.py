"""``python -m zstdpool`` and the ``zstdpool`` script: runs :func:`zstdpool._cli.main`."""

from __future__ import annotations

import sys

from zstdpool._cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
