#!/usr/bin/env bash
# The test command: every check a change must pass, on one interpreter, in a development build.
#
#   fmt        cargo fmt --all --check
#   clippy     cargo clippy --workspace --all-targets --features alloc-stats -- -D warnings
#   build      maturin develop --profile quick (Cargo.toml: optimized, no LTO, debug assertions
#              and overflow checks on) into a venv that has the `test` extra
#   pytest     the whole suite (tests/ and benchmarks/, each benchmark once), which runs ruff,
#              mypy --strict, stubtest and rustfmt over the tree too (tests/test_style.py,
#              tests/test_stubs.py)
#   cargo-test cargo test --profile quick -p zstdpool-core --features alloc-stats, beside
#              pytest: pytest keeps one core busy, and the core's tests need the other
#
# Usage: scripts/check.sh [-- PYTEST_ARGS...]
#   ZSTDPOOL_PYTHON      the interpreter (default: python3)
#   ZSTDPOOL_CHECK_DIR   venv and logs (default: target/check); the venv is kept and reused
#                        while pyproject.toml and the interpreter stay the same
# Prints each step's time; exits non-zero if any step failed, after running every step that
# does not depend on the failed one.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PY="${ZSTDPOOL_PYTHON:-python3}"
DIR="${ZSTDPOOL_CHECK_DIR:-$ROOT/target/check}"
LOGS="$DIR/logs"
VENV="$DIR/venv"
# maturin builds the extension; pinned as in scripts/build-wheels.sh.
MATURIN_VERSION="1.16.0"
pytest_args=()
if [ "${1:-}" = "--" ]; then
    shift
    pytest_args=("$@")
elif [ $# -gt 0 ]; then
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
rm -rf "$LOGS"
mkdir -p "$LOGS"
start=$SECONDS
failed=()
times=()

log() { printf '[check %4ds] %s\n' $((SECONDS - start)) "$*" >&2; }
# step NAME CMD...: runs CMD with its output in $LOGS/NAME.log, records its time and result.
step() {
    local name="$1" t=$SECONDS rc=0
    shift
    log "$name (log: $LOGS/$name.log)"
    "$@" >"$LOGS/$name.log" 2>&1 || rc=$?
    finish "$name" "$t" "$rc"
    return "$rc"
}
finish() {
    local name="$1" t="$2" rc="$3"
    if [ "$rc" -eq 0 ]; then
        times+=("$(printf '%-11s %5ds  ok' "$name" $((SECONDS - t)))")
    else
        times+=("$(printf '%-11s %5ds  FAILED (exit %s)' "$name" $((SECONDS - t)) "$rc")")
        failed+=("$name")
        tail -40 "$LOGS/$name.log" | sed "s/^/[$name] /" >&2
    fi
}

# --- the venv, in the background while the Rust checks run ------------------------------------
# Reinstalled only when pyproject.toml or the interpreter changed (a stamp of both).
venv_setup() {
    local stamp want
    want="$("$PY" -c 'import sys; print(sys.version)' | tr -d '\n'; sha256sum pyproject.toml)"
    stamp="$VENV/.zstdpool-check-stamp"
    if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
        echo "venv up to date: $VENV"
        return 0
    fi
    "$PY" -m venv --clear "$VENV" || return
    "$VENV/bin/python" -m pip install -q --upgrade pip || return
    # The test extra without zstdpool itself, which maturin develop installs.
    "$VENV/bin/python" - pyproject.toml >"$DIR/requirements.txt" <<'EOF' || return
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import pip._vendor.tomli as tomllib

project = tomllib.load(open(sys.argv[1], "rb"))["project"]
extras = project["optional-dependencies"]
for req in project["dependencies"] + extras["bench"] + extras["test"]:
    if re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0] != "zstdpool":
        print(req)
EOF
    "$VENV/bin/python" -m pip install -r "$DIR/requirements.txt" \
        "maturin==$MATURIN_VERSION" || return
    printf '%s' "$want" >"$stamp"
}
tv=$SECONDS
log "venv (log: $LOGS/venv.log), in the background"
venv_setup >"$LOGS/venv.log" 2>&1 &
venv_pid=$!

# --- the Rust checks ---------------------------------------------------------------------------
step fmt cargo fmt --all --check
step clippy cargo clippy --workspace --all-targets --features alloc-stats -- -D warnings

venv_rc=0
wait "$venv_pid" || venv_rc=$?
finish venv "$tv" "$venv_rc"

# --- the extension, then pytest beside the core's tests ----------------------------------------
if [ "$venv_rc" -eq 0 ]; then
    step build env VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" maturin develop --locked --profile quick || true
fi
tc=$SECONDS
log "cargo-test (log: $LOGS/cargo-test.log), beside pytest"
cargo test --profile quick -p zstdpool-core --features alloc-stats -- --test-threads=1 \
    >"$LOGS/cargo-test.log" 2>&1 &
cargo_pid=$!
if [ "$venv_rc" -eq 0 ] && [[ ! " ${failed[*]} " =~ " build " ]]; then
    step pytest "$VENV/bin/python" -m pytest -p no:cacheprovider -q -rfEs --durations=25 \
        "${pytest_args[@]}" \
        || true
    tail -1 "$LOGS/pytest.log" >&2
else
    times+=("$(printf '%-11s %5s  NOT RUN: no venv or no build' pytest -)")
    failed+=(pytest)
fi
cargo_rc=0
wait "$cargo_pid" || cargo_rc=$?
finish cargo-test "$tc" "$cargo_rc"
grep -E '^test result:' "$LOGS/cargo-test.log" | tail -3 >&2 || true

echo "== check steps (logs: $LOGS)"
printf '%s\n' "${times[@]}"
printf '%-11s %5ds\n' total $((SECONDS - start))
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all checks passed"
