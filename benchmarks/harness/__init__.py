"""Side-by-side benchmarks of zstdpool and its peers, run by ``python -m benchmarks``.

A *workload* is one operation on one input (say, "compress 64KiB at level 3") done by several
*contenders*: the first is zstdpool, the others are peers (python-zstandard, backports.zstd,
cramjam, pyarrow, ...). The runner verifies each contender's result once, then times them
interleaved: for each round it runs every contender for a calibrated batch of calls, so that
noise from a shared machine hits all of them alike; it reports the median time per call over
the rounds and the ratio to zstdpool (peer time / zstdpool time: above 1, zstdpool is faster).
The pytest-benchmark suite (``benchmarks/test_workloads.py``) runs the same workloads.

The modules, one idea each:

- :mod:`~benchmarks.harness.runner`: profiles, workloads and contenders, the registry, the
  timing loop, machine and version info;
- :mod:`~benchmarks.harness.report`: the text tables, JSON and the plot;
- :mod:`~benchmarks.harness.data`: the inputs (sample bytes, Arrow tables);
- :mod:`~benchmarks.harness.codec`, :mod:`~benchmarks.harness.ipc`,
  :mod:`~benchmarks.harness.threads`: the workloads and their contenders;
- :mod:`~benchmarks.harness.memory`: the memory table of ``bench --memory``.

Adding workloads
----------------
A workload is a :class:`~benchmarks.harness.runner.Workload`; each contender is a
:class:`~benchmarks.harness.runner.Contender` whose ``setup`` returns a zero-argument callable,
the thing that is timed::

    from benchmarks.harness.codec import check_compressed
    from benchmarks.harness.runner import Contender, Workload, register

    DATA = b"..."

    def _setup_zstdpool(stack):              # stack: contextlib.ExitStack, closed after timing
        import zstdpool
        return functools.partial(zstdpool.compress, DATA)

    def _setup_polars(stack):                # may raise Unavailable("why") to be skipped
        ...

    register(Workload(
        name="compress my data",             # unique; --filter matches name or group
        group="ipc",
        description="What one call does.",
        contenders=(                          # the first one is the baseline (zstdpool)
            Contender(
                "zstdpool",
                _setup_zstdpool,
                check=functools.partial(check_compressed, DATA),  # raises if wrong
                extra=lambda out: {"bytes": len(out)},            # figures for the table
            ),
            Contender("polars", _setup_polars, requires=("polars",)),
        ),
        nbytes=len(DATA),                    # input bytes per call, for the MB/s column
    ))

Workloads whose size depends on ``--tiny``/``--quick``/``--full`` are listed by a function of
the :class:`~benchmarks.harness.runner.Profile` instead, registered with the
:func:`~benchmarks.harness.runner.register_source` decorator::

    @register_source
    def ipc_workloads(profile: Profile) -> Iterable[Workload]:
        for size in profile.sizes:
            yield Workload(...)

Put such code in a module of this package and add the module's name to
:data:`~benchmarks.harness.runner.WORKLOAD_MODULES`;
:func:`~benchmarks.harness.runner.load_workloads` imports those modules before listing.
:func:`~benchmarks.harness.data.sample_data` gives realistic bytes of any size. A contender
whose ``requires`` modules are missing, or whose setup raises
:class:`~benchmarks.harness.runner.Unavailable` or ModuleNotFoundError, is skipped with a note;
any other exception, or a failed check, marks it failed (exit code 1). ``check(result)`` runs
once on the result of a call and must raise (e.g. AssertionError) if it is wrong;
``extra(result)`` returns figures shown and saved next to the timing (e.g. ``{"bytes": ...}``).
The pytest-benchmark suite picks up every registered workload."""


def child_env() -> dict[str, str]:
    """The environment of a child process that runs a harness module (``python -m
    benchmarks.harness.memory ...``): ``PYTHONPATH`` led by the repository's root, where the
    harness and the test servers are, then by the zstdpool it measures."""
    import os
    from pathlib import Path

    import zstdpool

    root = str(Path(__file__).resolve().parents[2])
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(zstdpool.__file__)))
    paths = (root, package_root, os.environ.get("PYTHONPATH", ""))
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
