"""What ``python -m benchmarks`` prints and writes: the timing table, its JSON and plot,
and the memory table (``--memory``) with its JSON.

The timing functions take the :class:`~benchmarks.harness.runner.Report` of a run; the memory
functions take the rows of :func:`benchmarks.harness.memory.memory_table`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

from benchmarks.harness.data import MiB
from benchmarks.harness.memory import HELD_SLACK, LEVEL, PEAK_OVERHEAD, format_amount, targets
from benchmarks.harness.runner import machine_info, module_version

if TYPE_CHECKING:
    from benchmarks.harness.runner import Report

# --------------------------------------------------------------------------------------------
# Timing


def _fmt_us(ns: float | None) -> str:
    if ns is None:
        return "-"
    us = ns / 1e3
    if us < 10:
        return f"{us:.2f}"
    if us < 1000:
        return f"{us:.1f}"
    return f"{us:,.0f}"


def format_table(report: Report) -> str:
    """The results as a plain-text table, with notes on skipped and failed contenders."""
    extra_keys = sorted({k for r in report.results for c in r.contenders for k in c.extra})
    header = ["workload", "contender", "us/call", "+-%", "MB/s", "ratio", *extra_keys]
    rows: list[list[str]] = []
    for r in report.results:
        first = True
        for c in r.contenders:
            if c.status != "ok":
                continue
            med = c.median_ns
            ratio = r.ratio(c)
            spread = c.spread
            mbps = r.workload.nbytes / med * 1e3 if r.workload.nbytes and med else None
            rows.append(
                [
                    r.workload.name if first else "",
                    c.label,
                    _fmt_us(med),
                    f"{spread * 100:.0f}" if spread is not None else "-",
                    f"{mbps:,.0f}" if mbps is not None else "-",
                    f"{ratio:.2f}" if ratio is not None else "-",
                    *(f"{c.extra[k]:,.0f}" if k in c.extra else "" for k in extra_keys),
                ]
            )
            first = False
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    left = {0, 1}

    def fmt(row: list[str]) -> str:
        cells = [
            cell.ljust(widths[i]) if i in left else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        ]
        return "  ".join(cells).rstrip()

    lines = [fmt(header), "  ".join("-" * w for w in widths)]
    for row in rows:
        if row[0] and len(lines) > 2:
            lines.append("")
        lines.append(fmt(row))
    lines += [
        "",
        f"profile {report.profile.name}; us/call: median over rounds; +-%: interquartile range "
        "/ median; ratio: contender time / zstdpool time (above 1: zstdpool is faster).",
    ]
    lines += [f"note: {n}" for n in report.notes()]
    return "\n".join(lines)


def to_json(report: Report) -> dict[str, Any]:
    """Everything measured, as JSON-ready data."""
    p = report.profile
    return {
        "profile": {k: getattr(p, k) for k in p.__dataclass_fields__},
        "machine": report.machine,
        "versions": report.versions,
        "workloads": [
            {
                "name": r.workload.name,
                "group": r.workload.group,
                "description": r.workload.description,
                "nbytes": r.workload.nbytes,
                "rounds": r.rounds,
                "seconds": r.seconds,
                "baseline": r.contenders[0].label,
                "contenders": [
                    {
                        "label": c.label,
                        "status": c.status,
                        "note": c.note,
                        "batch": c.batch,
                        "per_call_ns": c.per_call_ns,
                        "median_ns": c.median_ns,
                        "ratio": r.ratio(c),
                        "extra": c.extra,
                    }
                    for c in r.contenders
                ],
            }
            for r in report.results
        ],
    }


def write_json(report: Report, path: str | os.PathLike[str]) -> None:
    """Writes :func:`to_json` to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(to_json(report), f, indent=1)
        f.write("\n")


PLOT_HINT = "--plot needs matplotlib: pip install zstdpool[plot]"


def have_matplotlib() -> bool:
    """True if matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot(report: Report, path: str | os.PathLike[str]) -> None:
    """Draws the ratios of every peer to zstdpool as horizontal bars (log scale) into ``path``."""
    plot_json(to_json(report), path)


def plot_json(
    data: dict[str, Any], path: str | os.PathLike[str] | IO[bytes], fmt: str | None = None
) -> None:
    """Draws the ratios of a run's JSON (``to_json``; e.g. only some of its workloads) as
    horizontal bars, one per peer and workload (log scale), into ``path`` (a file name, or a
    binary file object with ``fmt``, e.g. "svg")."""
    try:
        import matplotlib
        import matplotlib.ticker

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise RuntimeError(PLOT_HINT) from e

    bars: list[tuple[float, float, str]] = []  # (y, ratio, contender label)
    ticks: list[tuple[float, str]] = []
    y = 0.0
    for w in data["workloads"]:
        peers = [(c["label"], c["ratio"]) for c in w["contenders"][1:]]
        shown = [(label, ratio) for label, ratio in peers if ratio is not None]
        if not shown:
            continue
        ticks.append((y + (len(shown) - 1) / 2, w["name"]))
        for label, ratio in shown:
            bars.append((y, ratio, label))
            y += 1
        y += 0.8
    if not bars:
        raise RuntimeError("nothing to plot: no contender was timed against zstdpool")
    labels = list(dict.fromkeys(label for _, _, label in bars))
    cmap = plt.get_cmap("tab20" if len(labels) > 10 else "tab10")
    colors = {label: cmap(i % cmap.N) for i, label in enumerate(labels)}
    fig, ax = plt.subplots(figsize=(11, 1.5 + 0.22 * y))
    for label in labels:
        mine = [(yy, ratio) for yy, ratio, lab in bars if lab == label]
        # Bars grow from 1 (as fast as zstdpool): right when the peer is slower, left if faster.
        ax.barh(
            [yy for yy, _ in mine],
            [ratio - 1 for _, ratio in mine],
            left=1,
            height=0.9,
            color=colors[label],
            label=label,
        )
    for yy, ratio, _ in bars:
        ax.annotate(
            f"{ratio:.2f}",
            (ratio, yy),
            xytext=(3 if ratio >= 1 else -3, 0),
            textcoords="offset points",
            ha="left" if ratio >= 1 else "right",
            va="center",
            fontsize="x-small",
        )
    ratios = [ratio for _, ratio, _ in bars]
    ax.set_xscale("log")
    lo, hi = min(0.5, min(ratios)) / 1.3, max(2.0, max(ratios)) * 1.3
    ax.set_xlim(lo, hi)
    steps = [m * 10.0**e for e in range(-4, 5) for m in (1, 2, 5)]
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([t for t in steps if lo <= t <= hi]))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks([t for t, _ in ticks])
    ax.set_yticklabels([name for _, name in ticks])
    ax.set_ylim(y - 0.4, -0.6)
    ax.set_xlabel("time relative to zstdpool (log scale; above 1: zstdpool is faster)")
    version, profile = data["versions"].get("zstdpool"), data["profile"]["name"]
    ax.set_title(f"zstdpool {version} vs peers ({profile})")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120, format=fmt)
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# Memory


def _mib(n: float | None) -> str:
    return "-" if n is None else f"{n / MiB:,.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def fmt(r: Sequence[str]) -> str:
        cells = [c.ljust(widths[i]) if i < left else c.rjust(widths[i]) for i, c in enumerate(r)]
        return "  ".join(cells).rstrip()

    return [fmt(header), "  ".join("-" * w for w in widths), *map(fmt, rows)]


def format_memory_table(rows: Sequence[dict[str, Any]]) -> str:
    """The memory table (MiB) and the zstdpool target checks, as plain text."""
    if not rows:
        return "memory: no input matches"
    header = [
        "input",
        "vectors",
        "zp compressed",
        "zp held",
        "zp peak",
        "zp peak t=1",
        "zp peak t=2",
        "zp idle ctx",
        "pa compressed",
        "pa held",
        "pa peak",
        "pa peak no-thr",
    ]
    body = []
    for r in rows:
        zp, pa_ = r["zstdpool"], r["pyarrow"]
        main = zp.get("None", {})
        pa_t, pa_n = pa_.get("True", {}), pa_.get("False", {})
        body.append(
            [
                r["input"],
                _mib(r["vectors"]),
                _mib(main.get("compressed")),
                _mib(main.get("held")),
                _mib(main.get("peak")),
                _mib(zp.get("1", {}).get("peak")),
                _mib(zp.get("2", {}).get("peak")),
                _mib(main.get("idle_bytes")),
                _mib(pa_t.get("compressed")),
                _mib(pa_t.get("held")),
                _mib(pa_t.get("peak")),
                _mib(pa_n.get("peak")),
            ]
        )
    lines = [
        f"memory of one Arrow IPC stream write, zstd level {LEVEL} (MiB; zp = zstdpool "
        "write_stream, threads=None unless t=; pa = pyarrow new_stream + BufferOutputStream)",
        "",
        *_table(header, body),
        "",
        "vectors: table.nbytes; held: allocated after the write, output included (pyarrow: the "
        "output buffer's capacity); peak: most allocated during the write on top of the input; "
        "zp idle ctx: zstd contexts the pool keeps warm after the write (shared by later "
        "writes, not in held unless they grew); pa peak no-thr: use_threads=False.",
        "",
        f"targets (zstdpool): held <= compressed + {HELD_SLACK:.0%}; peak <= "
        f"{format_amount(PEAK_OVERHEAD)} + compressed + threads x compressBound(largest buffer)",
        "",
    ]
    check_header = [
        "input",
        "threads",
        "held B",
        "limit B",
        "held",
        "peak B",
        "of which Rust",
        "limit B",
        "peak",
    ]
    check_rows = []
    for r in rows:
        for c in targets(r):
            check_rows.append(
                [
                    r["input"],
                    f"{c['threads']}->{c['used']}",
                    f"{c['held']:,}",
                    f"{c['held_limit']:,}",
                    "pass" if c["held_ok"] else f"FAIL +{c['held'] - c['held_limit']:,}",
                    f"{c['peak']:,}",
                    f"{c['rust_peak']:,}",
                    f"{c['peak_limit']:,}",
                    "pass" if c["peak_ok"] else f"FAIL +{c['peak'] - c['peak_limit']:,}",
                ]
            )
    lines += _table(check_header, check_rows)
    failed = sum(1 for r in rows for c in targets(r) if not (c["held_ok"] and c["peak_ok"]))
    lines.append("")
    lines.append(
        "all zstdpool targets met" if not failed else f"{failed} zstdpool row(s) over target"
    )
    lines.append(
        "threads: asked -> compressing (threads with a non-empty buffer to compress); peak B = "
        "Rust peak + Python peak (the output bytes object, built in place, and anything else "
        "Python allocates during the write)"
    )
    churn = [
        f"{r['input']} (threads={t}: {m['contexts_created']})"
        for r in rows
        for t, m in r["zstdpool"].items()
        if m["contexts_created"]
    ]
    if churn:
        lines.append(
            "note: zstd contexts the pool created during the measured (warm) write: "
            + "; ".join(churn)
        )
    hidden = [r["input"] for r in rows for m in r["pyarrow"].values() if m.get("peak_hidden")]
    if hidden:
        lines.append(f"note: pyarrow peak may be hidden by an earlier maximum: {hidden}")
    if not any(r["pyarrow"] for r in rows):
        lines.append("note: pyarrow was not measured; its columns are empty")
    return "\n".join(lines)


def write_memory_json(
    rows: Sequence[dict[str, Any]], path: str | os.PathLike[str], timing: dict[str, Any] | None
) -> None:
    """Writes the memory rows (and the timing report's JSON, if any) to ``path``."""
    data: dict[str, Any] = dict(timing) if timing is not None else {}
    if timing is None:
        data["machine"] = machine_info()
        data["versions"] = {"zstdpool": module_version("zstdpool")}
        data["versions"]["pyarrow"] = module_version("pyarrow")
    data["memory"] = {
        "level": LEVEL,
        "targets": {"held_slack": HELD_SLACK, "peak_overhead": PEAK_OVERHEAD},
        "rows": [{**r, "targets": targets(r)} for r in rows],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
