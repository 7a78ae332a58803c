"""The ``zstdpool`` command line (also ``python -m zstdpool``).

Each subcommand is a module of this package with an ``add_<name>(subparsers)`` function that
adds its parser and sets ``run`` (a function of the parsed arguments returning the exit
code); list it in :data:`COMMANDS`. Exit codes: 0 ok, 1 failure, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

Subparsers = Any  # argparse._SubParsersAction, which is private
Run = Callable[[argparse.Namespace], int]


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """Prints the usage and ``message`` on stderr; returns the exit code of bad usage."""
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _add_recompress(subparsers: Subparsers) -> None:
    from zstdpool._cli.recompress import add_recompress

    add_recompress(subparsers)


def _add_inspect(subparsers: Subparsers) -> None:
    from zstdpool._cli.inspect import add_inspect

    add_inspect(subparsers)


def _add_clean(subparsers: Subparsers) -> None:
    from zstdpool._cli.clean import add_clean

    add_clean(subparsers)


#: One function per subcommand, which imports the subcommand's module only when the parser is
#: built; to add one, write its module with ``add_<name>(subparsers)`` and list it here.
COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    _add_recompress,
    _add_inspect,
    _add_clean,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    from zstdpool import __version__

    parser = argparse.ArgumentParser(
        prog="zstdpool",
        description="Tools around zstdpool, pooled zstd contexts for Arrow data.",
    )
    parser.add_argument("--version", action="version", version=f"zstdpool {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for add in COMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit code (0 ok, 1 failure, 2 bad usage)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, or a usage error (2)
        if e.code is None:
            return EXIT_OK
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    run: Run | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
