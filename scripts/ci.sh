#!/usr/bin/env bash
# CI: the Rust core's tests, then release wheels for CPython 3.10-3.13 and free-threaded 3.14t
# (and the sdist), each wheel tested in a fresh venv as soon as it is built, while the next
# one builds (a release build's last step, fat LTO, runs on one core).
#
# Usage: scripts/ci.sh
#   ZSTDPOOL_CI_DIR   logs, wheels and venvs (default: target/ci; emptied first)
# Steps and their logs (in $ZSTDPOOL_CI_DIR/logs):
#   cargo-test        cargo test -p zstdpool-core --features alloc-stats -- --test-threads=1
#   ft-python         scripts/build-freethreaded-python.sh (cached after its first run),
#                     alongside cargo-test
#   wheels            scripts/build-wheels.sh 3.10 3.11 3.12 3.13 3.14t, into $ZSTDPOOL_CI_DIR/dist
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
VERSIONS=(3.10 3.11 3.12 3.13 3.14t)
start=$SECONDS
failed=()
times=()

log() { printf '[ci %4ds] %s\n' $((SECONDS - start)) "$*" >&2; }
took() { times+=("$(printf '%-14s %5ds  %s' "$1" "$2" "$3")"); }

# --- 1. the Rust core's tests, and the free-threaded interpreter, side by side -------------
log "cargo test (log: $LOGS/cargo-test.log) and the free-threaded CPython (log: $LOGS/ft-python.log)"
t=$SECONDS
scripts/build-freethreaded-python.sh >"$LOGS/ft-python.log" 2>&1 &
ft_pid=$!
if cargo test -p zstdpool-core --features alloc-stats -- --test-threads=1 \
        >"$LOGS/cargo-test.log" 2>&1; then
    took cargo-test $((SECONDS - t)) ok
else
    took cargo-test $((SECONDS - t)) FAILED
    failed+=(cargo-test)
    tail -30 "$LOGS/cargo-test.log" >&2
fi
if wait "$ft_pid"; then
    took ft-python $((SECONDS - t)) "ok (from the start of step 1)"
else
    took ft-python $((SECONDS - t)) FAILED
    failed+=(ft-python)
    tail -30 "$LOGS/ft-python.log" >&2
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
