#!/usr/bin/env bash
# The release matrix: release wheels (fat LTO) for CPython 3.10-3.13 and free-threaded 3.14t,
# and the sdist, each wheel tested in a fresh venv as soon as it is built, while the next one
# builds (a release build's last step, fat LTO, runs on one core). The test command
# (scripts/check.sh) has already run the whole suite on a development build; here each wheel
# is tested as it ships:
#   3.14t      the whole suite, with the GIL off from `import zstdpool` to the end
#   3.10-3.13  the suite but its slowest parts (scripts/test-matrix.sh says which)
#   every one  the README's tour, in a fresh venv with only what the tour imports
#
# Usage: scripts/matrix.sh
#   ZSTDPOOL_CI_DIR   logs, wheels and venvs (default: target/ci; emptied first)
#   ZSTDPOOL_FT_LOG   a log of scripts/build-freethreaded-python.sh started beforehand (by
#                     .ci/run, beside the test command): waited for through its pid in
#                     ZSTDPOOL_FT_PID; without them the interpreter is built (or found) here
# Steps and their logs (in $ZSTDPOOL_CI_DIR/logs):
#   ft-python         scripts/build-freethreaded-python.sh (cached after its first run)
#   wheels            scripts/build-wheels.sh 3.14t 3.10 3.11 3.12 3.13, into $ZSTDPOOL_CI_DIR/dist
#   test-<version>    scripts/test-matrix.sh <version>, started when that wheel is done
# Prints each step's time and the matrix's table; exits non-zero if any step failed.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CI="${ZSTDPOOL_CI_DIR:-$ROOT/target/ci}"
LOGS="$CI/logs"
rm -rf "$CI"
mkdir -p "$LOGS"
export ZSTDPOOL_DIST="$CI/dist"
export ZSTDPOOL_MATRIX_DIR="$CI/matrix"
export ZSTDPOOL_MATRIX_SUMMARY="$CI/matrix.tsv"
export ZSTDPOOL_WHEEL_DONE_DIR="$CI/wheels-done"
# 3.14t first: its whole-suite run is the longest, and overlaps the other wheels' builds.
VERSIONS=(3.14t 3.10 3.11 3.12 3.13)
start=$SECONDS
failed=()
times=()

log() { printf '[matrix %4ds] %s\n' $((SECONDS - start)) "$*" >&2; }
took() { times+=("$(printf '%-14s %5ds  %s' "$1" "$2" "$3")"); }

# --- 1. the free-threaded interpreter --------------------------------------------------------
t=$SECONDS
if [ -n "${ZSTDPOOL_FT_PID:-}" ]; then
    log "waiting for the free-threaded CPython started before (log: ${ZSTDPOOL_FT_LOG:-?})"
    ft_ok=0
    # Not a child of this shell: wait for the pid to go, then read the log's verdict.
    while kill -0 "$ZSTDPOOL_FT_PID" 2>/dev/null; do sleep 5; done
    tail -1 "${ZSTDPOOL_FT_LOG:-/dev/null}" | grep -q 'python3.14t$' && ft_ok=1
    cp "${ZSTDPOOL_FT_LOG:-/dev/null}" "$LOGS/ft-python.log" 2>/dev/null || true
else
    log "the free-threaded CPython (log: $LOGS/ft-python.log)"
    ft_ok=0
    scripts/build-freethreaded-python.sh >"$LOGS/ft-python.log" 2>&1 && ft_ok=1
fi
if [ "$ft_ok" = 1 ]; then
    took ft-python $((SECONDS - t)) "ok (waited here)"
else
    took ft-python $((SECONDS - t)) FAILED
    failed+=(ft-python)
    tail -30 "$LOGS/ft-python.log" >&2
    VERSIONS=(3.10 3.11 3.12 3.13)
fi

# --- 2. the wheels, one after another, in the background -------------------------------------
log "building the sdist and wheels (log: $LOGS/wheels.log)"
tw=$SECONDS
scripts/build-wheels.sh "${VERSIONS[@]}" >"$LOGS/wheels.log" 2>&1 &
wheels_pid=$!

# --- 3. each wheel's tests as soon as it is done -----------------------------------------------
for v in "${VERSIONS[@]}"; do
    while [ ! -f "$ZSTDPOOL_WHEEL_DONE_DIR/$v" ]; do
        if ! kill -0 "$wheels_pid" 2>/dev/null && [ ! -f "$ZSTDPOOL_WHEEL_DONE_DIR/$v" ]; then
            break
        fi
        sleep 5
    done
    if ! grep -q '^ok ' "$ZSTDPOOL_WHEEL_DONE_DIR/$v" 2>/dev/null; then
        log "$v: no wheel, not tested"
        took "test-$v" 0 "NOT RUN: no wheel"
        failed+=("test-$v")
        continue
    fi
    log "$v: wheel done at $((SECONDS - tw))s after the builds started; testing (log: $LOGS/test-$v.log)"
    t=$SECONDS
    if scripts/test-matrix.sh "$v" >"$LOGS/test-$v.log" 2>&1; then
        took "test-$v" $((SECONDS - t)) ok
    else
        took "test-$v" $((SECONDS - t)) FAILED
        failed+=("test-$v")
    fi
done
if wait "$wheels_pid"; then
    took wheels $((SECONDS - tw)) "ok (overlaps the tests)"
else
    took wheels $((SECONDS - tw)) FAILED
    failed+=(wheels)
fi

# --- summary -----------------------------------------------------------------------------------
echo "== wheels ($LOGS/wheels.log)"
sed -n '/^file /,$p' "$LOGS/wheels.log"
echo "== test matrix"
printf '%-6s %7s %7s %7s %9s %8s %8s %8s  %s\n' python passed skipped failed tour install pytest \
    total note
if [ -f "$ZSTDPOOL_MATRIX_SUMMARY" ]; then
    while IFS=$'\t' read -r v p s f i r tot tour note; do
        printf '%-6s %7s %7s %7s %9s %7ss %7ss %7ss  %s\n' "$v" "$p" "$s" "$f" "$tour" "$i" "$r" \
            "$tot" "$note"
    done <"$ZSTDPOOL_MATRIX_SUMMARY"
fi
echo "== steps"
printf '%s\n' "${times[@]}"
printf '%-14s %5ds\n' total $((SECONDS - start))
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all steps passed"
