"""``zstdpool clean``: removes the temporary files that writes which never finished left."""

from __future__ import annotations

import argparse
from typing import Any

from zstdpool._cli import EXIT_FAILURE, EXIT_OK


def add_clean(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "clean",
        help="remove temporary files left by writes that never finished",
        description=(
            "Remove zstdpool's temporary files (.<name>.zstdpool-<pid>-<random>.tmp) that a "
            "process killed mid-write left: those of the file PATH, or of every file in the "
            "directory PATH and the directories below it, last modified at least --min-age "
            "seconds ago. Nothing else is touched; links are neither followed nor removed. "
            "Prints each path removed."
        ),
        epilog=(
            "Exit codes: 0 ok (also for a file that the killed write never created), "
            "1 failure (e.g. PATH's directory does not exist), 2 bad usage."
        ),
    )
    p.add_argument("path", metavar="PATH", help="a file written by zstdpool, or a directory")
    p.add_argument(
        "--min-age",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="leave files younger than this alone: writes that may still be running "
        "(default: 3600)",
    )
    p.add_argument(
        "--no-recursive",
        dest="recursive",
        action="store_false",
        help="only the directory itself, not the directories below it",
    )
    p.set_defaults(run=run_clean, parser=p)


def run_clean(args: argparse.Namespace) -> int:
    import zstdpool

    try:
        removed = zstdpool.remove_stale_temp_files(
            args.path, min_age=args.min_age, recursive=args.recursive
        )
    except (OSError, ValueError) as e:
        print(f"zstdpool clean: {e}")
        return EXIT_FAILURE
    for path in removed:
        print(path)
    return EXIT_OK
