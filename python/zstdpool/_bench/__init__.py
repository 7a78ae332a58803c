"""Side-by-side benchmarks of zstdpool and its peers, run by ``python -m zstdpool bench``.

A *workload* is one operation on one input (say, "compress 64KiB at level 3") done by several
*contenders*: the first is zstdpool, the others are peers (python-zstandard, backports.zstd,
cramjam, pyarrow, ...). The runner verifies each contender's result once, then times them
interleaved: for each round it runs every contender for a calibrated batch of calls, so that
noise from a shared machine hits all of them alike; it reports the median time per call over
the rounds and the ratio to zstdpool (peer time / zstdpool time: above 1, zstdpool is faster).
The pytest-benchmark suite (``benchmarks/test_workloads.py``) runs the same workloads.

The modules, one idea each:

- :mod:`~zstdpool._bench.runner`: profiles, workloads and contenders, the registry, the
  timing loop, machine and version info;
- :mod:`~zstdpool._bench.report`: the text tables, JSON and the plot;
- :mod:`~zstdpool._bench.data`: the inputs (sample bytes, Arrow tables);
- :mod:`~zstdpool._bench.codec`, :mod:`~zstdpool._bench.ipc`, :mod:`~zstdpool._bench.threads`:
  the workloads and their contenders;
- :mod:`~zstdpool._bench.memory`: the memory table of ``bench --memory``.

Adding workloads
----------------
A workload is a :class:`~zstdpool._bench.runner.Workload`; each contender is a
:class:`~zstdpool._bench.runner.Contender` whose ``setup`` returns a zero-argument callable,
the thing that is timed::

    from zstdpool._bench.codec import check_compressed
    from zstdpool._bench.runner import Contender, Workload, register

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
the :class:`~zstdpool._bench.runner.Profile` instead, registered with the
:func:`~zstdpool._bench.runner.register_source` decorator::

    @register_source
    def ipc_workloads(profile: Profile) -> Iterable[Workload]:
        for size in profile.sizes:
            yield Workload(...)

Put such code in a module of this package and add the module's name to
:data:`~zstdpool._bench.runner.WORKLOAD_MODULES`; :func:`~zstdpool._bench.runner.load_workloads`
imports those modules before listing. :func:`~zstdpool._bench.data.sample_data` gives
realistic bytes of any size. A contender whose ``requires`` modules are missing, or whose
setup raises :class:`~zstdpool._bench.runner.Unavailable` or ModuleNotFoundError, is skipped
with a note; any other exception, or a failed check, marks it failed (exit code 1).
``check(result)`` runs once on the result of a call and must raise (e.g. AssertionError) if
it is wrong; ``extra(result)`` returns figures shown and saved next to the timing (e.g.
``{"bytes": ...}``). The pytest-benchmark suite picks up every registered workload.
"""
