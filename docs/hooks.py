"""mkdocs hooks: the benchmark figures, drawn from the benchmark's own output.

``benchmarks/results/*.json`` are runs of ``python -m benchmarks --json`` (the command is
in each file's sibling ``.cmd``). On a page:

- ``<!-- benchmarks: NAME -->`` becomes, for a timing run, the machine and the date, then per
  group of workloads a table of zstdpool's time per call and every peer's ratio, and a chart
  of the ratios (matplotlib, through the harness's own ``plot_json``); for a ``--memory`` or
  ``--instructions`` run, the harness's own table;
- ``<!-- headline: NAME -->`` becomes the table of HEADLINE's rows.

The README and benchmarks/RESULTS.md are not built by mkdocs: ``python docs/hooks.py``
writes the same tables into them (between ``<!-- generated: ... -->`` and
``<!-- end generated -->``), and a test fails while they differ from the runs. Nothing is
typed in by hand.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MARK = re.compile(r"^<!-- benchmarks: (?P<name>[\w.-]+) -->$", re.MULTILINE)
HEADLINE_MARK = re.compile(r"^<!-- headline: (?P<name>[\w.-]+) -->$", re.MULTILINE)
#: The home page's and the README's table: (workload, the peer's label or its alternatives, what
#: the row says). The figures come from the run; a workload or peer missing from it is an
#: error, not a blank.
HEADLINE: list[tuple[str, tuple[str, ...], str]] = [
    (
        "compress 1KiB L3",
        ("zstandard new per call",),
        "compress 1 KiB, against a new context per call",
    ),
    ("compress 1KiB L3", ("zstandard reused",), "compress 1 KiB, against a context kept by hand"),
    ("writer_per_table int32 256 rows", ("pyarrow",), "a new IPC writer per 256-row table"),
    ("one_writer int32 65536 rows", ("pyarrow",), "one long-lived IPC writer, 65,536-row tables"),
    ("parquet_writer int32 256 rows", ("pyarrow",), "write a 256-row Parquet file"),
    ("parquet_reader int32 256 rows", ("pyarrow",), "read a 256-row Parquet file"),
    ("dataset parquet 100000 rows, 1000 partitions", ("pyarrow",), "write 1,000 Hive partitions"),
    (
        "dataset read all, 100000 rows, 1000 partitions",
        ("pyarrow.dataset",),
        "read 1,000 Hive partitions",
    ),
    (
        "zstd: new compressor per 1KiB message",
        ("backports.zstd", "compression.zstd"),  # the peer's label on CPython 3.14
        "`zstdpool.zstd`: a new compressor per 1 KiB message",
    ),
]


def load(name: str) -> dict[str, Any]:
    run: dict[str, Any] = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    return run


def command(name: str) -> str:
    return (RESULTS / f"{name}.cmd").read_text(encoding="utf-8").strip()


def groups(run: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for w in run["workloads"]:
        found.setdefault(w["group"], []).append(w)
    return found


def time_per_call(ns: float | None) -> str:
    if ns is None:
        return "-"
    if ns < 1e6:
        return f"{ns / 1e3:,.1f} µs"
    if ns < 1e9:
        return f"{ns / 1e6:,.1f} ms"
    return f"{ns / 1e9:,.2f} s"


def table(workloads: list[dict[str, Any]]) -> str:
    rows = ["| workload | zstdpool | time per call | peer | ratio |", "|---|---|---:|---|---:|"]
    for w in workloads:
        first, *peers = w["contenders"]
        timed = [c for c in peers if c["ratio"] is not None]
        skipped = [c for c in peers if c["ratio"] is None]
        lead = f"| {w['name']} | {first['label']} | {time_per_call(first['median_ns'])} |"
        if not timed:
            rows.append(f"{lead} | | |")
        for i, c in enumerate(timed):
            head = lead if i == 0 else "| | | |"
            rows.append(f"{head} {c['label']} | {c['ratio']:.2f}x |")
        for c in skipped:
            note = (c["note"] or c["status"]).replace("|", "/")
            rows.append(f"| | | | {c['label']} | not run: {note} |")
    return "\n".join(rows)


def chart_name(run: str, group: str) -> str:
    return f"benchmarks/{run}-{group}.svg"


def harness() -> None:
    """Makes the harness importable: it is in the clone, not in the installed package."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def provenance(name: str, run: dict[str, Any]) -> list[str]:
    m = run["machine"]
    known = sorted((k, v) for k, v in run.get("versions", {}).items() if v and v != "unknown")
    versions = ", ".join(f"{k} {v}" for k, v in known)
    return [
        f"Run `{command(name)}` on {m['time_utc'][:10]}: {m['platform']}, {m['cpu_count']} CPUs,"
        f" {m['python_implementation']} {m['python']}, load {m['loadavg'][0]:.1f}.",
        "",
        f"Versions: {versions}.",
        "",
    ]


def section(name: str, charts: bool = True) -> str:
    """The markdown of run ``name``, whatever kind of run it is."""
    run = load(name)
    if "instructions" in run:
        return instructions_section(name, run)
    if "workloads" not in run:
        return memory_section(name, run)
    # A --full run holds the memory table too.
    timing = timing_section(name, run, charts)
    return timing + "\n" + memory_section(name, run) if "memory" in run else timing


def instructions_section(name: str, run: dict[str, Any]) -> str:
    harness()
    from benchmarks.harness.instructions import Counted, format_table

    rows = [Counted(**r) for r in run["instructions"]]
    return "\n".join([*provenance(name, run), "```text", format_table(rows), "```", ""])


def memory_section(name: str, run: dict[str, Any]) -> str:
    harness()
    from benchmarks.harness.report import format_memory_table

    table = format_memory_table(run["memory"]["rows"])
    return "\n".join([*provenance(name, run), "```text", table, "```", ""])


def timing_section(name: str, run: dict[str, Any], charts: bool) -> str:
    out = [
        *provenance(name, run),
        "A ratio is the peer's median time per call over zstdpool's: above 1, zstdpool is "
        "faster. Workloads are timed in interleaved rounds, so the machine's load falls on "
        "every contender alike.",
        "",
    ]
    for group, workloads in groups(run).items():
        out += [f"### {group}", ""]
        if charts:
            out += [f"![ratios of the {group} workloads]({chart_name(name, group)})", ""]
        out += [table(workloads), ""]
    return "\n".join(out)


def chart(run: dict[str, Any], group: str) -> bytes:
    """The SVG chart of one group of ``run``'s workloads."""
    harness()
    from benchmarks.harness.report import plot_json

    only = {**run, "workloads": groups(run)[group]}
    buf = io.BytesIO()
    plot_json(only, buf, fmt="svg")
    return buf.getvalue()


def on_files(files: Any, config: Any) -> Any:
    """Adds a chart per group of every timing run a page shows (each run read once)."""
    from mkdocs.structure.files import File

    for page in Path(config["docs_dir"]).rglob("*.md"):
        for m in MARK.finditer(page.read_text(encoding="utf-8")):
            name = m.group("name")
            run = load(name)
            for group in groups(run) if "workloads" in run else ():
                content = chart(run, group)
                files.append(File.generated(config, chart_name(name, group), content=content))
    return files


def headline(name: str) -> str:
    """The table of HEADLINE's rows from run ``name``."""
    run = {w["name"]: w for w in load(name)["workloads"]}
    rows = ["| workload | against | ratio |", "|---|---|---:|"]
    for workload, peers, says in HEADLINE:
        if workload not in run:
            raise ValueError(f"run {name!r} has no workload {workload!r}")
        contenders = {c["label"]: c for c in run[workload]["contenders"]}
        found = [contenders[p] for p in peers if p in contenders]
        if not found or found[0]["ratio"] is None:
            raise ValueError(f"run {name!r} has no ratio of {' or '.join(peers)} in {workload!r}")
        rows.append(f"| {says} | {found[0]['label']} | {found[0]['ratio']:.1f}x |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = HEADLINE_MARK.sub(lambda m: headline(m.group("name")), markdown)
    return MARK.sub(lambda m: section(m.group("name")), markdown)


GENERATED = re.compile(
    r"(?P<open><!-- generated: (?P<what>headline|benchmarks) (?P<name>[\w.-]+) -->\n)"
    r".*?(?P<close><!-- end generated -->)",
    re.DOTALL,
)
#: The files outside the site that show generated tables.
OUTSIDE = [ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md"]


def regenerate(text: str) -> str:
    """``text`` with every generated block drawn again from the runs."""

    def draw(m: re.Match[str]) -> str:
        name = m.group("name")
        body = headline(name) if m.group("what") == "headline" else section(name, charts=False)
        return f"{m.group('open')}{body.rstrip()}\n{m.group('close')}"

    return GENERATED.sub(draw, text)


if __name__ == "__main__":
    for path in OUTSIDE:
        path.write_text(regenerate(path.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
