#!/usr/bin/env bash
# The aarch64 leg: the aarch64 wheel that build-wheels.sh cross-builds (ZSTDPOOL_TARGET=
# aarch64-unknown-linux-gnu), installed with pyarrow's aarch64 wheel from PyPI into a fresh
# venv inside an arm64 Debian root (scripts/arm64-root.sh) and tested there, under qemu's
# user-mode emulation: the documentation's examples, then the part of the suite below. Correctness only:
# emulated timings say nothing about aarch64's speed, and none are reported.
#
# The root's Python is Debian bookworm's 3.11, so the wheel tested is the stable-ABI one
# (cp311-abi3), the one aarch64 machines with CPython 3.11 and later install.
#
# What runs, and why the rest does not (docs/getting-started.md and docs/contributing.md say so too):
#   the codec, its leases and the pool's accounting    tests/codec tests/pool tests/dicts
#   zstdpool.zstd's streams and files                   tests/zstd/test_streaming.py,
#                                                       tests/zstd/test_zstdfile.py
#   IPC: round trips, types, sinks, hostile and         tests/ipc/... (SELECTION below)
#     malformed input, limits
#   Parquet: the reader, the writer, round trips        tests/parquet/test_reader.py,
#                                                       test_writer.py, test_round_trips.py
#   datasets written and read, and path safety          tests/dataset/test_write_dataset.py,
#                                                       test_read_dataset.py, tests/sinks
#   exceptions and their messages                       tests/test_exceptions.py
# Left out: what runs the same Rust on the same data as on x86_64 and takes minutes under
# emulation (arrow-testing's corpora, the sweeps of address-space limits, 20,000 writer
# lifecycles), the peers' comparisons that have no wheel to compare with here, the style,
# stub and mypy checks (they read the source, not the machine code), object stores (a moto
# server under emulation) and Dask clusters.
#
# Usage: scripts/test-aarch64.sh [-- PYTEST_ARGS...]
# Environment:
#   ZSTDPOOL_DIST        where the aarch64 wheel is (default: dist)
#   ZSTDPOOL_AARCH64_DIR the copy of the tree, the venv and the logs (default: target/aarch64)
#   ARROW_TESTING_DATA   as for the tests (not used by the part that runs)
# Exits non-zero if the wheel is missing, does not install, or a test or the tour fails.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
DIST="$(cd "${ZSTDPOOL_DIST:-dist}" && pwd)"
WORK="${ZSTDPOOL_AARCH64_DIR:-$ROOT/target/aarch64}"
SELECTION=(
    tests/codec tests/pool tests/dicts
    tests/zstd/test_streaming.py tests/zstd/test_zstdfile.py
    tests/ipc/test_reader_round_trips.py tests/ipc/test_reader_hostile.py
    tests/ipc/test_reader_malformed.py tests/ipc/test_reader_limits.py
    tests/ipc/test_writer_types.py tests/ipc/test_writer_sinks.py
    tests/parquet/test_reader.py tests/parquet/test_writer.py tests/parquet/test_round_trips.py
    tests/dataset/test_write_dataset.py tests/dataset/test_read_dataset.py
    tests/sinks tests/test_exceptions.py
)
# What the tests and the tour import besides zstdpool and pyarrow (the wheel's dependency):
# pytest's plugins as pyproject.toml configures them, and the tour's pandas, fsspec and polars
# (dask comes with the wheel's `dask` extra, as the docs install it).
REQS=(pytest pytest-xdist pytest-benchmark hypothesis pandas fsspec polars)

log() { printf '[test-aarch64 %4ds] %s\n' "$SECONDS" "$*" >&2; }

pytest_args=()
if [ "${1:-}" = "--" ]; then
    shift
    pytest_args=("$@")
fi

whl="$(ls -t "$DIST"/zstdpool-*-cp311-abi3-*aarch64*.whl 2>/dev/null | head -1 || true)"
if [ -z "$whl" ]; then
    log "FAIL no cp311-abi3 aarch64 wheel in $DIST"
    exit 1
fi
log "wheel: $(basename "$whl")"

root="$(scripts/arm64-root.sh create | tail -1)"
log "arm64 root: $root"

# A copy of what git sees (as test-matrix.sh makes it), the wheel, and the venv, all under
# $WORK, which the root sees as /work.
rm -rf "$WORK/src" "$WORK/dist"
mkdir -p "$WORK/src" "$WORK/dist" "$WORK/logs"
git ls-files -z -co --exclude-standard \
    | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$WORK/src"
cp "$whl" "$WORK/dist/"
inside() {
    ZSTDPOOL_ARM64_BIND="$WORK:/work" ZSTDPOOL_ARM64_CWD="${CWD:-/work/src}" \
        scripts/arm64-root.sh run -- "$@"
}

log "a fresh venv with the wheel[dask] and ${REQS[*]} (log: $WORK/logs/install.log)"
if ! inside sh -c 'python3 -m venv --clear /work/venv \
        && /work/venv/bin/pip install -q --only-binary=:all: "$@"' \
        _ "/work/dist/$(basename "$whl")[dask]" "${REQS[@]}" >"$WORK/logs/install.log" 2>&1; then
    tail -20 "$WORK/logs/install.log" >&2
    log "FAIL the install failed"
    exit 1
fi
inside /work/venv/bin/python -c 'import platform, pyarrow, zstdpool
assert platform.machine() == "aarch64", platform.machine()
assert zstdpool.decompress(zstdpool.compress(b"x" * 1000)) == b"x" * 1000
print("zstdpool", zstdpool.__version__, "and pyarrow", pyarrow.__version__, "on",
      platform.machine(), "from", zstdpool.__file__)' >&2

status=0
log "the documentation's examples (log: $WORK/logs/tour.log)"
if CWD=/tmp inside /work/venv/bin/python /work/src/scripts/docs_examples.py \
        >"$WORK/logs/tour.log" 2>&1; then
    tail -1 "$WORK/logs/tour.log" >&2
else
    tail -30 "$WORK/logs/tour.log" >&2
    log "FAIL the tour"
    status=1
fi

log "pytest, on two workers (log: $WORK/logs/pytest.log)"
if inside env ZSTDPOOL_EXPECT_INSTALLED=1 /work/venv/bin/python -m pytest -p no:cacheprovider \
        -q -rfE -n 2 "${SELECTION[@]}" "${pytest_args[@]}" >"$WORK/logs/pytest.log" 2>&1; then
    tail -1 "$WORK/logs/pytest.log" >&2
else
    grep -E '^(FAILED|ERROR)' "$WORK/logs/pytest.log" | head -30 >&2 || true
    tail -3 "$WORK/logs/pytest.log" >&2
    log "FAIL pytest"
    status=1
fi
exit $status
