"""The harness of ``python -m benchmarks``: profiles, workloads, contenders, the timing.

A *workload* is one operation on one input (say, "compress 64KiB at level 3") done by several
*contenders*: the first is zstdpool, the others are peers. The runner checks each contender's
result once, then times them interleaved: for each round it runs every contender for a
calibrated batch of calls, so that noise from a shared machine hits all of them alike; it
reports the median time per call over the rounds and the ratio to zstdpool (peer time /
zstdpool time: above 1, zstdpool is faster). See :mod:`benchmarks.harness` for how to add
workloads.

Workloads are declared once, in the modules of :data:`WORKLOAD_MODULES`, and run both by the
command line (:func:`run`) and by the pytest-benchmark suite (``benchmarks/test_workloads.py``,
through :func:`prepare` and :func:`verify`, as :func:`measure` does).
"""

from __future__ import annotations

import gc
import importlib
import importlib.metadata
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, TextIO

from benchmarks.harness.data import KiB, MiB

#: Modules imported by :func:`load_workloads`; each registers its workloads on import.
WORKLOAD_MODULES: list[str] = [
    "benchmarks.harness.codec",
    "benchmarks.harness.dicts",
    "benchmarks.harness.ipc",
    "benchmarks.harness.threads",
    "benchmarks.harness.parquet",
    "benchmarks.harness.feather",
    "benchmarks.harness.dataset",
    "benchmarks.harness.dataset_read",
    "benchmarks.harness.store",
    "benchmarks.harness.paths",
    "benchmarks.harness.dask",
    "benchmarks.harness.zstd_module",
    "benchmarks.harness.engines",
]

#: The timed thing: one call is one operation.
Timed = Callable[[], object]


class Unavailable(Exception):
    """Raised by a contender's setup when it cannot run here; it is skipped with a note."""


# --------------------------------------------------------------------------------------------
# Profiles


@dataclass(frozen=True)
class Profile:
    """How big and how long: sizes of the inputs and the timing budget."""

    name: str
    #: Input sizes in bytes for per-call workloads.
    sizes: tuple[int, ...]
    #: Sizes also compressed at level 1.
    fast_level_sizes: tuple[int, ...]
    #: (count, size) cases for the many-buffers workloads.
    many: tuple[tuple[int, int], ...]
    #: Rounds per workload: at least ``min_rounds``, at most ``max_rounds``, as many as fit
    #: in ``workload_seconds``.
    min_rounds: int
    max_rounds: int
    workload_seconds: float
    #: Target duration of one batch of calls of one contender.
    batch_seconds: float
    #: Calls made before calibration (after the correctness check).
    warmup_calls: int


PROFILES: dict[str, Profile] = {
    "tiny": Profile(
        name="tiny",
        sizes=(1 * KiB, 16 * KiB),
        fast_level_sizes=(1 * KiB,),
        many=((16, 4 * KiB),),
        min_rounds=2,
        max_rounds=2,
        workload_seconds=0.0,
        batch_seconds=0.0002,
        warmup_calls=1,
    ),
    "quick": Profile(
        name="quick",
        sizes=(1 * KiB, 64 * KiB, 4 * MiB),
        fast_level_sizes=(1 * KiB,),
        many=((1000, 16 * KiB),),
        min_rounds=5,
        max_rounds=21,
        workload_seconds=2.5,
        batch_seconds=0.003,
        warmup_calls=3,
    ),
    "full": Profile(
        name="full",
        sizes=(1 * KiB, 16 * KiB, 64 * KiB, 1 * MiB, 4 * MiB, 32 * MiB),
        fast_level_sizes=(1 * KiB, 64 * KiB),
        many=((1000, 16 * KiB), (10000, 1 * KiB)),
        min_rounds=11,
        max_rounds=51,
        workload_seconds=12.0,
        batch_seconds=0.01,
        warmup_calls=10,
    ),
}


def tiny_requested() -> bool:
    """True when ZSTDPOOL_BENCH_TINY asks for a smoke run (used by the test suite)."""
    return os.environ.get("ZSTDPOOL_BENCH_TINY", "").strip().lower() in {"1", "true", "yes", "on"}


# --------------------------------------------------------------------------------------------
# Workloads and the registry


@dataclass(frozen=True)
class Contender:
    """One way of doing a workload's operation."""

    label: str
    #: Builds the timed callable; may enter contexts on the stack (closed after timing).
    setup: Callable[[ExitStack], Timed]
    #: Raises if the result of one call is wrong.
    check: Callable[[Any], None] | None = None
    #: Figures to report from the result of one call, e.g. {"bytes": 1234}.
    extra: Callable[[Any], Mapping[str, float]] | None = None
    #: Modules that must import, else the contender is skipped with a note.
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workload:
    """An operation on a given input, done by each contender; the first is the baseline."""

    name: str
    group: str
    description: str
    contenders: tuple[Contender, ...]
    #: Input bytes one call processes (for MB/s); 0 when it does not apply.
    nbytes: int = 0
    #: Make one untimed call before each timed batch: multi-threaded contenders that follow a
    #: single-threaded one would otherwise time how long the idle CPU takes to come back
    #: (for every library alike; see benchmarks/RESULTS-archive.md).
    settle: bool = False
    #: Calls take seconds (a thousand requests to a server): one warm-up call and at most
    #: :data:`SLOW_ROUNDS` rounds, since a round of every contender takes minutes and one call
    #: already averages a thousand requests.
    slow: bool = False

    def matches(self, filters: Sequence[str]) -> bool:
        """True if no filter is given or one is a substring of the name or group."""
        if not filters:
            return True
        hay = f"{self.group} {self.name}".lower()
        return any(f.lower() in hay for f in filters)


WorkloadSource = Callable[[Profile], Iterable[Workload]]

_FIXED: list[Workload] = []
_SOURCES: list[WorkloadSource] = []


def register(workload: Workload) -> Workload:
    """Registers a workload that is the same under every profile; returns it."""
    _FIXED.append(workload)
    return workload


def module_of(profile: Profile, name: str) -> str | None:
    """The module whose source lists the workload ``name`` under ``profile`` (None for one
    registered whole, or none)."""
    for source in _SOURCES:
        if any(w.name == name for w in source(profile)):
            return source.__module__
    return None


def register_source(source: WorkloadSource) -> WorkloadSource:
    """Registers a function listing workloads for a profile (usable as a decorator)."""
    _SOURCES.append(source)
    return source


def load_workloads(
    profile: Profile, filters: Sequence[str] = (), modules: Sequence[str] | None = None
) -> list[Workload]:
    """All registered workloads for ``profile`` that match ``filters``, in registration order
    (those of ``modules`` alone, when given: a child process measuring one workload imports
    only what it needs)."""
    for module in WORKLOAD_MODULES if modules is None else modules:
        importlib.import_module(module)
    found: list[Workload] = [w for source in _SOURCES for w in source(profile)]
    found += _FIXED
    seen: set[str] = set()
    for w in found:
        if w.name in seen:
            raise ValueError(f"two benchmark workloads are named {w.name!r}")
        seen.add(w.name)
        if not w.contenders:
            raise ValueError(f"benchmark workload {w.name!r} has no contenders")
    return [w for w in found if w.matches(filters)]


# --------------------------------------------------------------------------------------------
# Timing


@dataclass
class ContenderResult:
    """What was measured for one contender of a workload."""

    label: str
    #: "ok", "skipped" (not available here) or "failed" (setup or check raised).
    status: str = "ok"
    note: str = ""
    #: Calls per batch.
    batch: int = 0
    #: Time per call of each round, in nanoseconds.
    per_call_ns: list[float] = field(default_factory=list)
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def median_ns(self) -> float | None:
        """The median over rounds of the time per call."""
        return statistics.median(self.per_call_ns) if self.per_call_ns else None

    @property
    def spread(self) -> float | None:
        """The interquartile range of the rounds relative to the median."""
        med = self.median_ns
        if med is None or len(self.per_call_ns) < 2 or med <= 0:
            return None
        q1, _, q3 = statistics.quantiles(self.per_call_ns, n=4, method="inclusive")
        return (q3 - q1) / med


@dataclass
class WorkloadResult:
    """The results of a workload's contenders, the first being the baseline."""

    workload: Workload
    rounds: int
    seconds: float
    contenders: list[ContenderResult]

    def ratio(self, result: ContenderResult) -> float | None:
        """Contender time / baseline time (above 1: the baseline is faster)."""
        base = self.contenders[0].median_ns
        mine = result.median_ns
        if base is None or mine is None or base <= 0:
            return None
        return mine / base


@dataclass
class Report:
    """A whole run."""

    profile: Profile
    results: list[WorkloadResult]
    machine: dict[str, Any]
    versions: dict[str, str | None]

    @property
    def failed(self) -> list[tuple[str, ContenderResult]]:
        """(workload name, result) of every contender that failed."""
        return [
            (r.workload.name, c) for r in self.results for c in r.contenders if c.status == "failed"
        ]

    def notes(self) -> list[str]:
        """One line per distinct skip or failure."""
        seen: dict[str, list[str]] = {}
        for r in self.results:
            for c in r.contenders:
                if c.status != "ok":
                    seen.setdefault(f"{c.label} {c.status}: {c.note}", []).append(r.workload.name)
        return [
            f"{note} ({', '.join(names) if len(names) <= 2 else f'{len(names)} workloads'})"
            for note, names in seen.items()
        ]


def before_each(fn: Timed) -> Callable[[], object] | None:
    """What must run, untimed, before each call of ``fn`` (its ``before_each`` attribute):
    a writer of a directory of files is timed writing into an empty one, which this empties."""
    reset = getattr(fn, "before_each", None)
    return reset if callable(reset) else None


def _time_batch(fn: Timed, n: int) -> int:
    """Nanoseconds taken by ``n`` calls of ``fn``, with the garbage collector paused; a
    ``before_each`` runs before each call, outside the time."""
    reset = before_each(fn)
    enabled = gc.isenabled()
    gc.disable()
    try:
        if reset is None:
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn()
            return time.perf_counter_ns() - t0
        total = 0
        for _ in range(n):
            reset()
            t0 = time.perf_counter_ns()
            fn()
            total += time.perf_counter_ns() - t0
        return total
    finally:
        if enabled:
            gc.enable()


def calibrate(fn: Timed, target_ns: float) -> tuple[int, float]:
    """Returns (calls per batch so a batch takes about ``target_ns``, ns per call)."""
    n = 1
    while True:
        elapsed = max(_time_batch(fn, n), 1)
        if elapsed * 2 >= target_ns or n >= 1 << 24:
            break
        n *= max(2, min(100, int(target_ns / elapsed)))
    per_call = elapsed / n
    return max(1, round(target_ns / per_call)), per_call


def prepare(contender: Contender, stack: ExitStack) -> tuple[Timed, Any]:
    """Sets ``contender`` up and makes its first call: returns the timed callable and the
    call's result (for :func:`verify`).

    Raises :class:`Unavailable` when the contender cannot run here: a module of its
    ``requires`` is missing, or its setup (or the call) raised Unavailable or
    ModuleNotFoundError. Any other exception means that the contender is broken.
    """
    try:
        for module in contender.requires:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as e:
                raise Unavailable(f"{module} is not installed") from e
        fn = contender.setup(stack)
        return fn, fn()
    except ModuleNotFoundError as e:
        raise Unavailable(f"{e.name} is not installed") from e


def verify(contender: Contender, result: Any) -> dict[str, float]:
    """Runs the contender's check on the result of one call (it raises if the result is
    wrong); returns the contender's figures for that result (``extra``)."""
    if contender.check is not None:
        contender.check(result)
    if contender.extra is None:
        return {}
    return {k: float(v) for k, v in contender.extra(result).items()}


def _prepare(contender: Contender, stack: ExitStack, result: ContenderResult) -> Timed | None:
    """Sets a contender up and checks one call; None (and a note) if it is skipped or broken."""
    try:
        fn, out = prepare(contender, stack)
    except Unavailable as e:
        result.status, result.note = "skipped", str(e)
        return None
    except Exception as e:
        result.status, result.note = "failed", f"setup: {type(e).__name__}: {e}"
        return None
    try:
        result.extra = verify(contender, out)
    except Exception as e:
        result.status, result.note = "failed", f"check: {type(e).__name__}: {e}"
        return None
    return fn


class Progress:
    """A one-line text progress bar on a tty; plain lines otherwise."""

    WIDTH = 24

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = max(total, 1)
        self.live = stream.isatty()
        self._shown = 0
        self._noted: set[str] = set()

    def update(self, done: float, text: str) -> None:
        """Redraws the bar: ``done`` workloads of ``total`` finished, then ``text``."""
        if not self.live:
            return
        filled = int(self.WIDTH * min(done / self.total, 1.0))
        bar = "#" * filled + "." * (self.WIDTH - filled)
        line = f"[{bar}] {int(done)}/{self.total} {text}"
        cols = shutil.get_terminal_size((80, 24)).columns - 1
        line = line[:cols]
        self.stream.write("\r" + line + " " * max(0, self._shown - len(line)))
        self.stream.flush()
        self._shown = len(line)

    def clear(self) -> None:
        """Erases the bar."""
        if self.live and self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0

    def line(self, text: str) -> None:
        """Prints a full line above the bar."""
        self.clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """Prints a note once, however often it is given."""
        if text not in self._noted:
            self._noted.add(text)
            self.line(f"note: {text}")


#: The most rounds of a slow workload (:attr:`Workload.slow`).
SLOW_ROUNDS = 3


def measure(workload: Workload, profile: Profile, progress: Progress, index: int) -> WorkloadResult:
    """Checks, warms up, calibrates and times the contenders of one workload, interleaved."""
    t_start = time.perf_counter()
    results = [ContenderResult(c.label) for c in workload.contenders]
    progress.update(index, f"{workload.name}: setting up")
    with ExitStack() as stack:
        ready: list[tuple[ContenderResult, Timed]] = []
        for contender, result in zip(workload.contenders, results, strict=True):
            fn = _prepare(contender, stack, result)
            if fn is None:
                where = f"{workload.name}: " if result.status == "failed" else ""
                progress.note(f"{where}{result.label} {result.status}: {result.note}")
                continue
            for _ in range(1 if workload.slow else profile.warmup_calls):
                reset = before_each(fn)
                if reset is not None:
                    reset()
                fn()
            ready.append((result, fn))
        target_ns = profile.batch_seconds * 1e9
        round_ns = 0.0
        for result, fn in ready:
            result.batch, per_call = calibrate(fn, target_ns)
            round_ns += result.batch * per_call
        fit = int(profile.workload_seconds * 1e9 / round_ns) if round_ns else 0
        rounds = max(profile.min_rounds, min(profile.max_rounds, fit))
        if workload.slow:
            rounds = min(rounds, SLOW_ROUNDS)
        for r in range(rounds):
            progress.update(index + r / rounds, f"{workload.name}: round {r + 1}/{rounds}")
            shift = r % len(ready) if ready else 0
            for result, fn in ready[shift:] + ready[:shift]:
                if workload.settle:
                    fn()
                result.per_call_ns.append(_time_batch(fn, result.batch) / result.batch)
    seconds = time.perf_counter() - t_start
    progress.line(
        f"[{index + 1}/{progress.total}] {workload.name}: {len(ready)} contenders "
        f"x {rounds} rounds, {seconds:.1f}s"
    )
    return WorkloadResult(workload, rounds, seconds, results)


# --------------------------------------------------------------------------------------------
# Machine and versions


def machine_info() -> dict[str, Any]:
    """Where the run happened."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    if hasattr(os, "getloadavg"):
        info["loadavg"] = list(os.getloadavg())
    return info


def module_version(module: str) -> str | None:
    """The installed version of a module's distribution, or None if it is not installed."""
    try:
        return importlib.metadata.version(module)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return str(getattr(mod, "__version__", "unknown"))


def require_version(module: str, minimum: tuple[int, ...], why: str) -> None:
    """Raises :class:`Unavailable` when ``module``'s installed version is below ``minimum``
    (older peers are what pip resolves on older Pythons); ``why`` says what it lacks."""
    found = module_version(module) or "0"
    parts = tuple(int(p) for p in found.split(".")[: len(minimum)] if p.isdigit())
    if parts < minimum:
        wanted = ".".join(map(str, minimum))
        raise Unavailable(f"{module} {found} {why} ({wanted} and later do)")


def versions(workloads: Iterable[Workload]) -> dict[str, str | None]:
    """zstdpool, the zstd it links, and every peer the workloads require."""
    import zstdpool

    found: dict[str, str | None] = {
        "zstdpool": zstdpool.__version__,
        "libzstd (zstdpool)": zstdpool.ZSTD_VERSION,
    }
    for module in sorted({m for w in workloads for c in w.contenders for m in c.requires}):
        found[module] = module_version(module)
    return found


# --------------------------------------------------------------------------------------------
# Running


def run(workloads: Sequence[Workload], profile: Profile, err: TextIO | None = None) -> Report:
    """Measures ``workloads`` one after another, with progress on ``err`` (default stderr)."""
    progress = Progress(err if err is not None else sys.stderr, len(workloads))
    results: list[WorkloadResult] = []
    try:
        for i, workload in enumerate(workloads):
            results.append(measure(workload, profile, progress, i))
    finally:
        progress.clear()
    return Report(profile, results, machine_info(), versions(workloads))
