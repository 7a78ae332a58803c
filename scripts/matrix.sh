#!/usr/bin/env bash
# The release matrix: release wheels (fat LTO) for CPython 3.10, 3.11 and later (one wheel on
# the stable ABI) and free-threaded 3.14t, and the sdist, each wheel tested in a fresh venv as
# soon as it is built, while the next one builds (a release build's last step, fat LTO, runs on
# one core). The stable-ABI wheel is tested on 3.11, 3.12 and 3.13 (on the version in
# ZSTDPOOL_SUITE_RAN_ON, which .ci/run sets to the test command's, by the tour alone: see
# scripts/test-matrix.sh). The test command
# (scripts/check.sh) has already run the whole suite on a development build; here each wheel
# is tested as it ships:
#   3.14t      the whole suite, with the GIL off from `import zstdpool` to the end
#   3.10-3.13  the suite but its slowest parts (scripts/test-matrix.sh says which); not on
#              the version ZSTDPOOL_SUITE_RAN_ON names
#   every one  the documentation's examples, in a fresh venv with only what they import
# Then the other platforms: the aarch64 wheel, cross-built and tested under emulation in an
# arm64 Debian root, and clippy of the core and the bindings for macOS.
#
# Usage: scripts/matrix.sh
#   ZSTDPOOL_CI_DIR   logs, wheels and venvs (default: target/ci; emptied first)
#   ZSTDPOOL_FT_LOG   a log of scripts/build-freethreaded-python.sh started beforehand (by
#                     .ci/run, beside the test command): waited for through its pid in
#                     ZSTDPOOL_FT_PID; without them the interpreter is built (or found) here
# Steps and their logs (in $ZSTDPOOL_CI_DIR/logs):
#   ft-python         scripts/build-freethreaded-python.sh (cached after its first run)
#   wheels            scripts/build-wheels.sh 3.14t abi3 3.10, into $ZSTDPOOL_CI_DIR/dist
#   test-<version>    scripts/test-matrix.sh <version>, started when that wheel is done
#   wheel-aarch64     scripts/build-wheels.sh abi3 with ZSTDPOOL_TARGET=aarch64-unknown-linux-gnu,
#                     after the x86_64 wheels, into $ZSTDPOOL_CI_DIR/dist-aarch64
#   test-aarch64      scripts/test-aarch64.sh, once that wheel and the x86_64 tests are done
#   check-macos       scripts/check-macos.sh, after the aarch64 wheel
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
# 3.14t first: its whole-suite run is the longest, and overlaps the other wheels' builds. Then
# the stable-ABI wheel, which three versions test.
WHEELS=(3.14t abi3 3.10)
VERSIONS=(3.14t 3.11 3.12 3.13 3.10)
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
    WHEELS=(abi3 3.10)
    VERSIONS=(3.11 3.12 3.13 3.10)
fi

# The wheel a version is tested with.
wheel_of() {
    case "$1" in
        3.10|*t) echo "$1" ;;
        *) echo abi3 ;;
    esac
}

# --- 2. the wheels, one after another, in the background -------------------------------------
log "building the sdist and wheels (log: $LOGS/wheels.log), then the aarch64 wheel and the macOS check"
tw=$SECONDS
# One build at a time (two cores): the x86_64 wheels, the aarch64 wheel, the macOS check.
# Each writes its exit status and time to a file of its own when it ends.
ARM_DONE="$CI/wheels-done-aarch64"
{
    run_stage() {
        local name="$1" t0=$SECONDS rc=0
        shift
        "$@" >"$LOGS/$name.log" 2>&1 || rc=$?
        # Written whole, then renamed: the poller never reads it half-written.
        echo "$rc $((SECONDS - t0))" >"$CI/$name.status.tmp"
        mv "$CI/$name.status.tmp" "$CI/$name.status"
    }
    run_stage wheels scripts/build-wheels.sh "${WHEELS[@]}"
    run_stage wheel-aarch64 env ZSTDPOOL_TARGET=aarch64-unknown-linux-gnu \
        ZSTDPOOL_DIST="$CI/dist-aarch64" ZSTDPOOL_WHEEL_DONE_DIR="$ARM_DONE" \
        scripts/build-wheels.sh --no-sdist abi3
    run_stage check-macos scripts/check-macos.sh
} &
wheels_pid=$!
# Whether the background stage $1 has ended (its status file is written), and its line.
stage_done() { [ -f "$CI/$1.status" ]; }
stage_took() {
    local rc secs
    read -r rc secs <"$CI/$1.status"
    if [ "$rc" = 0 ]; then
        took "$1" "$secs" "ok (overlaps the tests)"
    else
        took "$1" "$secs" "FAILED (exit $rc)"
        failed+=("$1")
        tail -30 "$LOGS/$1.log" >&2
    fi
}

# --- 3. each wheel's tests as soon as it is done -----------------------------------------------
for v in "${VERSIONS[@]}"; do
    done_file="$ZSTDPOOL_WHEEL_DONE_DIR/$(wheel_of "$v")"
    while [ ! -f "$done_file" ]; do
        if stage_done wheels && [ ! -f "$done_file" ]; then
            break
        fi
        sleep 5
    done
    if ! grep -q '^ok ' "$done_file" 2>/dev/null; then
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
while ! stage_done wheels; do sleep 5; done
stage_took wheels

# --- 4. the aarch64 wheel, under emulation; the macOS check --------------------------------------
while ! stage_done wheel-aarch64; do sleep 5; done
stage_took wheel-aarch64
if grep -q '^ok ' "$ARM_DONE/abi3" 2>/dev/null; then
    log "aarch64: testing under emulation (log: $LOGS/test-aarch64.log)"
    t=$SECONDS
    if ZSTDPOOL_DIST="$CI/dist-aarch64" ZSTDPOOL_AARCH64_DIR="$CI/aarch64" \
            scripts/test-aarch64.sh >"$LOGS/test-aarch64.log" 2>&1; then
        took test-aarch64 $((SECONDS - t)) ok
    else
        took test-aarch64 $((SECONDS - t)) FAILED
        failed+=(test-aarch64)
        tail -30 "$LOGS/test-aarch64.log" >&2
    fi
else
    took test-aarch64 0 "NOT RUN: no wheel"
    failed+=(test-aarch64)
fi
wait "$wheels_pid" || true
stage_took check-macos

# --- summary -----------------------------------------------------------------------------------
echo "== wheels ($LOGS/wheels.log, $LOGS/wheel-aarch64.log)"
sed -n '/^file /,$p' "$LOGS/wheels.log"
sed -n '/^file /,$p' "$LOGS/wheel-aarch64.log" | tail -n +2
echo "== aarch64, under emulation ($LOGS/test-aarch64.log)"
grep -E '^\[test-aarch64' "$LOGS/test-aarch64.log" 2>/dev/null | tail -3 || true
tail -1 "$CI/aarch64/logs/pytest.log" 2>/dev/null || true
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
