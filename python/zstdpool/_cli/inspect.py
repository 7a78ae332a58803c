"""The ``inspect`` command: the layout and per-column compression of an Arrow IPC stream or
file.

``inspect PATH`` shows the format, schema, batch and row counts, codecs and the compressed
and uncompressed bytes of each column; the byte accounting comes from
``zstdpool._zstdpool.inspect_ipc``, which reads the messages without decoding the data.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from zstdpool._cli import EXIT_OK
from zstdpool._cli.files import (
    InputError,
    failure,
    head,
    open_source,
    plural,
    print_out,
    regular_size,
    runtime_errors,
    sniff_format,
)

if TYPE_CHECKING:
    from zstdpool._zstdpool import IpcInspection


def add_inspect(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="show the layout and per-column compression of an Arrow IPC stream or file",
        description=(
            "Show the format (stream or file), schema, number of record batches and rows, "
            "codecs, and for each column its compressed and uncompressed bytes (dictionary "
            "batches included) and their ratio, compressed / uncompressed."
        ),
        epilog="Exit codes: 0 ok, 1 failure (e.g. corrupt input), 2 bad usage.",
    )
    p.add_argument("path", metavar="PATH", help="the Arrow IPC stream or file (Feather v2)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the figures as JSON (the schema as its string form)",
    )
    p.set_defaults(run=run_inspect, parser=p)


def run_inspect(args: argparse.Namespace) -> int:
    from zstdpool import _zstdpool

    parser: argparse.ArgumentParser = args.parser
    path = args.path
    f, code = open_source(parser, path, "PATH")
    if f is None:
        return code
    with f:
        size = regular_size(f)
        try:
            sniff_format(head(f), size)
        except InputError as e:
            return failure(f"{path}: {e}")
        except OSError as e:
            return failure(f"{path}: cannot read: {e}")
    try:
        info = _zstdpool.inspect_ipc(path)
    except runtime_errors() as e:
        return failure(f"{path}: {e}")
    if args.json:
        print_out(json.dumps(inspect_json(info), indent=2, default=str))
    else:
        print_out(format_inspect(path, size, info))
    return EXIT_OK


def inspect_json(info: IpcInspection) -> dict[str, Any]:
    """``info`` with its schema as a string, ready for ``json.dumps``."""
    out = dict(info)
    if "schema" in out:
        out["schema"] = str(out["schema"])
    return out


def _ratio(compressed: int, uncompressed: int) -> str:
    return f"{compressed / uncompressed:.3f}" if uncompressed else "-"


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def format_inspect(path: str, size: int | None, info: IpcInspection) -> str:
    """The readable report of :func:`run_inspect`: header lines, then a table of columns."""
    columns = list(info.get("columns", []))
    codecs = info.get("codecs") or []
    size_text = f" ({size:,} bytes)" if size is not None else ""
    batches = plural(info["num_batches"], "record batch")
    dictionaries = info.get("num_dictionary_batches", 0)
    if dictionaries:
        batches += ", " + plural(dictionaries, "dictionary batch")
    lines = [
        f"path:     {path}{size_text}",
        f"format:   {info['format']}",
        f"codec:    {', '.join(codecs) if codecs else '- (no buffers)'}",
        f"batches:  {batches}",
        f"rows:     {info['num_rows']:,}",
        f"body:     {info.get('body_bytes', 0):,} bytes in message bodies",
        f"schema:   {plural(len(columns), 'column')}",
    ]
    metadata = getattr(info.get("schema"), "metadata", None)
    if metadata:
        keys = ", ".join(k.decode(errors="replace") for k in metadata)
        lines.append(f"metadata: {_clip(keys, 70)}")
    lines.append("")

    total_c = sum(c["compressed_bytes"] for c in columns)
    total_u = sum(c["uncompressed_bytes"] for c in columns)
    header = ("column", "type", "compressed", "uncompressed", "ratio")
    rows = [
        (
            str(c["name"]),
            _clip(str(c["type"])),
            f"{c['compressed_bytes']:,}",
            f"{c['uncompressed_bytes']:,}",
            _ratio(c["compressed_bytes"], c["uncompressed_bytes"]),
        )
        for c in columns
    ]
    total = ("total", "", f"{total_c:,}", f"{total_u:,}", _ratio(total_c, total_u))
    widths = [max(len(r[i]) for r in [header, *rows, total]) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        left = [cells[i].ljust(widths[i]) for i in range(2)]
        right = [cells[i].rjust(widths[i]) for i in range(2, len(cells))]
        return "  ".join(left + right).rstrip()

    lines.append(line(header))
    lines.append(line(tuple("-" * w for w in widths)))
    lines.extend(line(r) for r in rows)
    lines.append(line(tuple("-" * w for w in widths)))
    lines.append(line(total))
    lines.append("")
    lines.append("ratio = compressed / uncompressed bytes (dictionary batches included)")
    return "\n".join(lines)
