"""``python -m benchmarks``, from a clone of the repository: zstdpool and its peers timed side
by side (see :mod:`benchmarks.harness`), or, with ``--memory``, the memory of one Arrow IPC
write, or, with ``--peaks``, the peak and held resident memory of whole writes and reads. The
harness is not part of the installed package. Exit codes: 0 ok, 1 failure, 2 bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    """Prints the usage and ``message`` on stderr; returns the exit code of bad usage."""
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=(
            "Time zstdpool and its peers (python-zstandard, backports.zstd, cramjam, pyarrow, "
            "...) on the same workloads, interleaved to share the noise of a busy machine. "
            "Prints the median time per call and the ratio peer time / zstdpool time (above "
            "1: zstdpool is faster). Peers that are not installed are skipped with a note."
        ),
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "--quick",
        dest="profile",
        action="store_const",
        const="quick",
        help="a short run (default): about 25 minutes on two cores, 20 of them in the object "
        "store workloads (--filter picks workloads)",
    )
    size.add_argument(
        "--full",
        dest="profile",
        action="store_const",
        const="full",
        help="more rounds and larger inputs, then the --memory table; takes several minutes",
    )
    # A smoke run of a second or two for the test suite (also ZSTDPOOL_BENCH_TINY=1).
    size.add_argument(
        "--tiny", dest="profile", action="store_const", const="tiny", help=argparse.SUPPRESS
    )
    p.add_argument(
        "--filter",
        metavar="SUBSTRING",
        action="append",
        default=[],
        help="run only workloads whose group or name contains SUBSTRING (case-insensitive; "
        "repeat to run several)",
    )
    p.add_argument(
        "--memory",
        action="store_true",
        help="instead of timing, print the memory one Arrow IPC write holds and peaks at, "
        "zstdpool and pyarrow side by side (zstd level 3), with zstdpool's targets",
    )
    p.add_argument(
        "--peaks",
        action="store_true",
        help="instead of timing, print the peak and held resident memory of one whole "
        "Parquet, IPC and dataset write and of a dataset read, zstdpool and its peers side by "
        "side, each in a fresh process, with zstdpool's held target",
    )
    p.add_argument(
        "--instructions",
        action="store_true",
        help="instead of timing, count the instructions one call of each contender executes, "
        "under valgrind's callgrind (slow: use --filter)",
    )
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--json", metavar="PATH", help="write every figure and machine info to PATH")
    p.add_argument(
        "--plot",
        metavar="PATH",
        help="draw the ratios as a bar chart into PATH (e.g. bench.png); needs matplotlib",
    )
    p.set_defaults(profile="quick", parser=p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark command line; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits on --help (0) and bad usage (2)
        return int(e.code or 0)
    return run_bench(args)


def _writable(path: str) -> bool:
    parent = os.path.dirname(os.path.abspath(path))
    return os.path.isdir(parent) and os.access(parent, os.W_OK)


def run_bench(args: argparse.Namespace) -> int:
    from benchmarks.harness import report, runner

    parser: argparse.ArgumentParser = args.parser
    profile = runner.PROFILES["tiny" if runner.tiny_requested() else args.profile]
    if args.memory:
        return _run_bench_memory(args, profile.name)
    if args.peaks:
        return _run_bench_peaks(args, profile.name)
    workloads = runner.load_workloads(profile, args.filter)
    if args.list:
        for w in workloads:
            print(f"{w.group:8}  {w.name:32}  {w.description}")
        return EXIT_OK
    if not workloads:
        return usage_error(parser, f"no workload matches {' or '.join(map(repr, args.filter))}")
    if args.instructions:
        return _run_instructions(args, profile, workloads)
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path is not None and not _writable(path):
            return usage_error(parser, f"{option}: cannot write {path!r}")
    if args.plot is not None and not report.have_matplotlib():
        return usage_error(parser, report.PLOT_HINT)

    timing = runner.run(workloads, profile)
    print(report.format_table(timing))
    if profile.name == "full":
        from benchmarks.harness import memory

        why = memory.unavailable()
        rows = [] if why else memory.memory_table(profile.name, args.filter)
        print(f"\nnote: {why}" if why else "\n" + report.format_memory_table(rows))
        if args.json is not None:
            report.write_memory_json(rows, args.json, timing=report.to_json(timing))
    elif args.json is not None:
        report.write_json(timing, args.json)
    if args.json is not None:
        print(f"wrote {args.json}", file=sys.stderr)
    if args.plot is not None:
        try:
            report.plot(timing, args.plot)
        except RuntimeError as e:
            print(f"{parser.prog}: error: {e}", file=sys.stderr)
            return EXIT_FAILURE
        print(f"wrote {args.plot}", file=sys.stderr)
    return EXIT_FAILURE if timing.failed else EXIT_OK


def _run_instructions(args: argparse.Namespace, profile: Any, workloads: list[Any]) -> int:
    from benchmarks.harness import instructions

    why = instructions.unavailable()
    if why:
        print(f"{args.parser.prog}: error: {why}", file=sys.stderr)
        return EXIT_FAILURE
    rows = instructions.count(profile, workloads)
    print(instructions.format_table(rows))
    if args.json is not None:
        with open(args.json, "w", encoding="utf-8") as f:
            from benchmarks.harness.runner import machine_info, versions

            data = {
                "machine": machine_info(),
                "versions": versions(workloads),
                "instructions": [r.__dict__ for r in rows],
            }
            json.dump(data, f, indent=2)
        print(f"wrote {args.json}", file=sys.stderr)
    return EXIT_FAILURE if any(r.instructions is None for r in rows) else EXIT_OK


def _run_bench_peaks(args: argparse.Namespace, size_choice: str) -> int:
    from benchmarks.harness import peaks

    why = peaks.unavailable()
    if why:
        print(f"{args.parser.prog}: error: {why}", file=sys.stderr)
        return EXIT_FAILURE
    rows = peaks.peak_table(size_choice, args.filter)
    print(peaks.format_peak_table(rows))
    if args.json is not None:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"peaks": rows}, f, indent=2)
        print(f"wrote {args.json}", file=sys.stderr)
    return EXIT_FAILURE if any("error" in r for r in rows) else EXIT_OK


def _run_bench_memory(args: argparse.Namespace, size_choice: str) -> int:
    from benchmarks.harness import memory, report

    parser: argparse.ArgumentParser = args.parser
    cases = memory.memory_cases(size_choice, args.filter)
    if args.list:
        print(memory.list_cases(size_choice, args.filter))
        return EXIT_OK
    if not cases:
        return usage_error(parser, f"no input matches {' or '.join(map(repr, args.filter))}")
    if args.plot is not None:
        return usage_error(parser, "--plot draws the timing ratios; it does not go with --memory")
    if args.json is not None and not _writable(args.json):
        return usage_error(parser, f"--json: cannot write {args.json!r}")
    why = memory.unavailable()
    if why:
        print(f"{parser.prog}: error: {why}", file=sys.stderr)
        return EXIT_FAILURE
    rows = memory.memory_table(size_choice, args.filter)
    print(report.format_memory_table(rows))
    if args.json is not None:
        report.write_memory_json(rows, args.json, timing=None)
        print(f"wrote {args.json}", file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
