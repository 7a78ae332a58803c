#!/usr/bin/env bash
# The test command: every check a change must pass, on one interpreter, in a quick build.
#
#   fmt          cargo fmt --all --check
#   venv         a venv with the `test` and `docs` extras, filled in the background while the
#                Rust builds (kept in target/check and reused while pyproject.toml and the
#                interpreter stay the same)
#   build        maturin develop --profile quick (Cargo.toml: optimized, no LTO, debug
#                assertions and overflow checks on), in place
#   cargo-build  the core's tests, compiled in the quick-test profile (unoptimized: they run
#                in seconds, and their dev-dependencies' features rebuild the arrow crates)
#   install      the extension installed into the venv (editable)
#   browser      Chromium and its driver from Debian's archive (for the docs' browser tests),
#                installed in the background while the Rust builds, where missing
#   docs         the documentation site, `mkdocs build --strict` (any warning fails it), into
#                $DIR/site, which the docs tests then check (tests/docs)
#   pytest       the whole suite (tests/ and benchmarks/, each benchmark once) on two workers
#                (pytest-xdist), which runs ruff, mypy --strict, stubtest and rustfmt over the
#                tree too (tests/test_style.py, tests/test_stubs.py)
#   cargo-test   cargo test --workspace --profile quick-test, beside pytest; then the core's
#                path-safety, dataset and memory tests with its `portable` feature (the
#                fallbacks other Unix systems run)
#   clippy       its lints with -D warnings, checked by the build steps as they compile the
#                workspace's crates (see "clippy" below), which covers what `cargo clippy
#                --workspace --all-targets -- -D warnings` covers
#
# Usage: scripts/check.sh [-- PYTEST_ARGS...]
#   ZSTDPOOL_PYTHON      the interpreter (default: python3)
#   ZSTDPOOL_CHECK_DIR   venv, cargo cache and logs (default: target/check); the venv is kept
#                        and reused while pyproject.toml and the interpreter stay the same
#   ZSTDPOOL_CARGO_CACHE the cargo cache's parent instead (its check/; .ci/run sets it)
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

# --- clippy, in the builds themselves ----------------------------------------------------------
# `cargo clippy` is cargo check with clippy-driver as the workspace members' compiler wrapper:
# a check build of every dependency of its own, minutes on two cores. Here the same wrapper
# lints the workspace's crates while they are compiled for the tests, and -Dwarnings makes
# every lint an error (cargo caps the lints of registry dependencies). The extension, the
# core and the core's tests are all compiled below (the root crate has no test target), so
# nothing `cargo clippy --workspace --all-targets -- -D warnings` lints is left out.
if ! clippy_driver="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)"; then
    log "clippy-driver not found: install clippy (rustup component add clippy)"
    exit 2
fi
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export RUSTFLAGS="${RUSTFLAGS:-} -Dwarnings"
# Its own cargo cache: RUSTFLAGS is part of every crate's fingerprint, so sharing target/ with
# builds made without it would rebuild every dependency each time one or the other ran.
# ZSTDPOOL_CARGO_CACHE (set by .ci/run) puts it outside the clone, kept from one run to the next.
export CARGO_TARGET_DIR="${ZSTDPOOL_CHECK_CARGO_DIR:-${ZSTDPOOL_CARGO_CACHE:+$ZSTDPOOL_CARGO_CACHE/check}}"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$DIR/cargo}"

step fmt cargo fmt --all --check

# --- Chromium, for the docs' browser tests: in the background, beside the builds ---------------
# shellcheck source=scripts/debian-packages.sh
source "$ROOT/scripts/debian-packages.sh"
tb=$SECONDS
log "browser (log: $LOGS/browser.log), in the background"
debian_packages chromium chromium-driver >"$LOGS/browser.log" 2>&1 &
browser_pid=$!

# --- the venv: made here, filled in the background while the Rust builds ----------------------
# Remade only when pyproject.toml or the interpreter changed (a stamp of both).
stamp="$VENV/.zstdpool-check-stamp"
want="$("$PY" -c 'import sys; print(sys.version)' | tr -d '\n'; sha256sum pyproject.toml)"
fill_venv() {
    # The test and docs extras without zstdpool itself, which maturin develop installs.
    "$VENV/bin/python" - pyproject.toml >"$DIR/requirements.txt" <<'PYTHON' || return
import re
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import pip._vendor.tomli as tomllib

project = tomllib.load(open(sys.argv[1], "rb"))["project"]
extras = project["optional-dependencies"]
for req in project["dependencies"] + extras["bench"] + extras["test"] + extras["docs"]:
    if re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0] != "zstdpool":
        print(req)
PYTHON
    "$VENV/bin/python" -m pip install -r "$DIR/requirements.txt" || return
    printf '%s' "$want" >"$stamp"
}
tv=$SECONDS
venv_rc=0
venv_pid=""
if [ -x "$VENV/bin/maturin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    log "venv up to date: $VENV"
else
    # maturin first, so that the build can start while pip fetches the rest.
    step venv-base bash -c '"$1" -m venv --clear "$2" && "$2/bin/python" -m pip install -q \
        --upgrade pip "maturin==$3"' _ "$PY" "$VENV" "$MATURIN_VERSION" || venv_rc=1
    if [ "$venv_rc" -eq 0 ]; then
        log "venv (log: $LOGS/venv.log), in the background"
        fill_venv >"$LOGS/venv.log" 2>&1 &
        venv_pid=$!
    fi
fi
in_venv=(env VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH")

# --- the builds: the extension in place, then the core's tests -----------------------------------
built=0
if [ "$venv_rc" -eq 0 ] && step build "${in_venv[@]}" maturin develop --locked --profile quick \
        --skip-install; then
    built=1
fi
step cargo-build cargo test --workspace --profile quick-test --features alloc-stats --locked \
    --no-run || true
if [ -n "$venv_pid" ]; then
    wait "$venv_pid" || venv_rc=$?
    finish venv "$tv" "$venv_rc"
fi
# Installed into the venv (editable: python/ is imported from the tree); already built.
installed=0
if [ "$venv_rc" -eq 0 ] && [ "$built" = 1 ] && step install "${in_venv[@]}" maturin develop \
        --locked --profile quick; then
    installed=1
fi

browser_rc=0
wait "$browser_pid" || browser_rc=$?
finish browser "$tb" "$browser_rc"

# --- the documentation site, built strictly; the docs tests check what it holds -----------------
if [ "$installed" = 1 ]; then
    if step docs env NO_MKDOCS_2_WARNING=1 "$VENV/bin/python" -m mkdocs build --strict \
            --site-dir "$DIR/site"; then
        export ZSTDPOOL_DOCS_SITE="$DIR/site"
    else
        # The docs tests then fail at once, pointing at the log, rather than each build it.
        export ZSTDPOOL_DOCS_SITE_FAILED="$LOGS/docs.log"
    fi
fi
# A docs tool or Chromium missing is a failure here, not a skip.
export ZSTDPOOL_DOCS_REQUIRED=1

# --- pytest, beside the core's tests ---------------------------------------------------------------
tc=$SECONDS
log "cargo-test (log: $LOGS/cargo-test.log), beside pytest"
# Then the path-safety, dataset and memory tests again with the core's `portable` feature:
# the fallbacks that macOS runs (a tree removed by a walk beneath descriptors, no huge-page
# hint), forced on here so that they are tested.
{
    cargo test --workspace --profile quick-test --features alloc-stats --locked -- \
        --test-threads=1 \
    && echo "== the core with --features portable" \
    && cargo test -p zstdpool-core --profile quick-test --features alloc-stats,portable --locked \
        --lib -- --test-threads=1 path_sink dataset memory scan
} >"$LOGS/cargo-test.log" 2>&1 &
cargo_pid=$!
if [ "$installed" = 1 ]; then
    # Two workers (pytest-xdist): the suite is mostly Python and subprocesses, one core each.
    step pytest "$VENV/bin/python" -m pytest -p no:cacheprovider -q -rfEs --durations=25 -n 2 \
        --junitxml="$LOGS/junit.xml" "${pytest_args[@]}" || true
    tail -1 "$LOGS/pytest.log" >&2
else
    times+=("$(printf '%-11s %5s  NOT RUN: no venv or no build' pytest -)")
    failed+=(pytest)
fi
cargo_rc=0
wait "$cargo_pid" || cargo_rc=$?
finish cargo-test "$tc" "$cargo_rc"
grep -E '^test result:' "$LOGS/cargo-test.log" | tail -4 >&2 || true

echo "== check steps (logs: $LOGS)"
printf '%s\n' "${times[@]}"
printf '%-11s %5ds\n' total $((SECONDS - start))
if [ ${#failed[@]} -gt 0 ]; then
    echo "FAILED: ${failed[*]}"
    exit 1
fi
echo "all checks passed"
