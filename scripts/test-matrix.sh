#!/usr/bin/env bash
# Run the test suite (pytest's testpaths: tests/ and benchmarks/) against the wheels in dist/,
# one fresh venv per CPython version, from a copy of the repository in which the source tree's
# python/ is not importable: zstdpool must come from the venv's site-packages
# (tests/conftest.py checks it: ZSTDPOOL_EXPECT_INSTALLED=1). The versions in FULL_VERSIONS
# (default: 3.14t) run the whole suite; the others leave out QUICK_SKIP below, the suite's
# slowest parts, which the test command (scripts/check.sh) has already run on a development
# build and which test nothing that differs between CPython versions.
#
# Usage: scripts/test-matrix.sh [--freethreaded] [VERSION...] [-- PYTEST_ARGS...]
#   VERSION         3.10, 3.11, 3.12, 3.13 (pyenv) or 3.14t (the free-threaded build of
#                   scripts/build-freethreaded-python.sh); default: 3.10 3.11 3.12 3.13
#   --freethreaded  add 3.14t to the default list
# On 3.14t, the `test` extra cannot install (polars, python-zstandard and duckdb have no
# wheel for it; duckdb's pre-release turns the GIL back on), so the extra's other packages are
# installed, from wheels only, and the tests of the missing peers skip with the reason.
# ZSTDPOOL_EXPECT_FREETHREADED=1 makes tests/conftest.py assert that the GIL is off after
# `import zstdpool` and still off when the run ends.
# Then, as a user would: another fresh venv with the wheel and only what the documentation's
# examples import (the wheel's `dask` extra, pandas, fsspec, and polars except on 3.14t, which
# it has no wheel for), where scripts/docs_examples.py runs every example of the README and
# docs/ from outside the repository (a page that needs an engine not installed there, Ray or
# pyiceberg, is skipped from that block on, named); a failed example fails the version.
# Environment:
#   ZSTDPOOL_FULL_VERSIONS  the versions that run the whole suite (default: 3.14t; "3.10
#                         3.11 3.12 3.13 3.14t" runs it everywhere)
#   ZSTDPOOL_SUITE_RAN_ON  versions whose suite the test command (scripts/check.sh) has just
#                         passed from these sources: if the version's wheel is the stable-ABI
#                         one, which the other versions' suites test, only the tour runs there
#                         (.ci/run sets it; default: none)
#   ZSTDPOOL_DIST         where the wheels are (default: dist)
#   ZSTDPOOL_MATRIX_DIR   venvs, copies and logs (default: target/matrix)
#   ZSTDPOOL_MATRIX_SUMMARY  a file to append one tab-separated line per version to
#   ZSTDPOOL_FT_PREFIX    prefix of the free-threaded interpreter
#   ARROW_TESTING_DATA    as for the tests (default: ../shared/arrow-testing/data beside
#                         the repository, resolved before the copy is made)
# Prints a table: version, passed, skipped, failed (failures and errors), the tour's result,
# times. Exits non-zero if any version fails, has no wheel or cannot install.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

DIST="$(cd "${ZSTDPOOL_DIST:-dist}" && pwd)"
WORK="${ZSTDPOOL_MATRIX_DIR:-$ROOT/target/matrix}"
FT_PREFIX="${ZSTDPOOL_FT_PREFIX:-$HOME/.cache/zstdpool/python3.14t}"
export ARROW_TESTING_DATA="${ARROW_TESTING_DATA:-$(cd "$ROOT/.." && pwd)/shared/arrow-testing/data}"
# Packages of the test extra that cannot be installed on the free-threaded interpreter.
FT_EXCLUDE="polars duckdb zstandard backports.zstd pyiceberg ray"
# What the docs' examples import besides zstdpool and pyarrow (polars is added but on 3.14t).
# dask and distributed come from the wheel's `dask` extra, as the docs install them.
TOUR_REQS=(pandas fsspec)
mkdir -p "$WORK"

# What versions outside FULL_VERSIONS leave out, and why (the README names these too).
FULL_VERSIONS="${ZSTDPOOL_FULL_VERSIONS:-3.14t}"
# Each of these runs the Rust core on data (gold files, fuzz corpora, mutations, clusters,
# allocation counts, memory limits) the same way on every CPython; the bindings, the pyarrow
# and pandas interop, the stubs and the peers that differ by version are all still tested.
QUICK_SKIP=(
    --ignore=benchmarks                       # the benchmark harness, each workload once
    --ignore=tests/ipc/test_conformance.py    # arrow-testing's gold files and fuzz corpora
    --ignore=tests/ipc/test_reader_hostile.py # every truncation and mutation of a file
    --ignore=tests/test_memory.py             # 20,000 writer lifecycles, process growth
    --ignore=tests/test_allocation_failures.py # every reader under a sweep of RLIMIT_AS
    --ignore=tests/test_freed_memory.py       # glibc's arenas after three large writes
    --ignore=tests/dask/test_cluster.py       # two-host LocalClusters
    --ignore=tests/dask/test_mixed.py         # a cluster with a worker lacking the preload
    -n 2                                      # and on two workers (pytest-xdist)
)

log() { printf '[test-matrix] %s\n' "$*" >&2; }

versions=()
pytest_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --freethreaded) ft=1 ;;
        --) shift; pytest_args=("$@"); break ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) log "unknown option $1"; exit 2 ;;
        *) versions+=("$1") ;;
    esac
    shift
done
[ ${#versions[@]} -gt 0 ] || versions=(3.10 3.11 3.12 3.13)
[ -z "${ft:-}" ] || versions+=(3.14t)

# shellcheck source=scripts/pythons.sh
source "$ROOT/scripts/pythons.sh"

# The wheel for a version: cp310-cp310, cp311-abi3 (the stable-ABI wheel, for 3.11 and
# later) or cp314-cp314t.
wheel_for() {
    local v="$1" tag
    case "$v" in
        *t) tag="cp${v%t}"; tag="${tag/./}-${tag/./}t" ;;
        3.10) tag="cp310-cp310" ;;
        *) tag="cp311-abi3" ;;
    esac
    ls -t "$DIST"/zstdpool-*-"$tag"-*.whl 2>/dev/null | head -1
}

# A copy of what git sees in the work tree (tracked and untracked, not ignored): the tests,
# benchmarks, pyproject.toml (pytest's configuration) and the sources the style, stub and
# docs tests read. python/ is there as files, but not on sys.path.
copy_tree() {
    local dest="$1"
    rm -rf "$dest"
    mkdir -p "$dest"
    git -C "$ROOT" ls-files -z -co --exclude-standard \
        | (cd "$ROOT" && tar --null --ignore-failed-read -T - -cf - 2>/dev/null) \
        | tar -xf - -C "$dest"
}

# Counts from pytest's last line ("3 failed, 1488 passed, 36 skipped, 44 xfailed, 2 errors,
# 512 subtests passed in 391.27s"): passed skipped failed, where skipped counts xfailed and
# failed counts errors (subtests are not counted).
counts() {
    "$1" - "$2" <<'EOF'
import re
import sys

try:
    lines = open(sys.argv[1], errors="replace").read().splitlines()
except OSError:
    lines = []
last = next((x for x in reversed(lines) if re.search(r" in [0-9.]+s", x)), "")
last = re.sub(r"[0-9]+ subtests? \w+", "", last)
n = {k: sum(int(m) for m in re.findall(rf"([0-9]+) {k}", last)) for k in
     ("passed", "skipped", "xfailed", "failed", "errors?", "xpassed")}
print(n["passed"] + n["xpassed"], n["skipped"] + n["xfailed"], n["failed"] + n["errors?"])
EOF
}

PEERS="zstandard backports.zstd polars duckdb cramjam arro3.core arro3.io numpy pandas dask distributed"
rows=()
status=0
for v in "${versions[@]}"; do
    start=$SECONDS
    dir="$WORK/$v"
    mkdir -p "$dir"
    logf="$dir/pytest.log"
    row() { rows+=("$(printf '%-6s %7s %7s %7s %9s %8s %8s %8s  %s' "$v" "$@")"); }
    if ! py="$(interpreter "$v")"; then
        log "$v: no interpreter"; row - - - - - - - "no interpreter"; status=1; continue
    fi
    whl="$(wheel_for "$v")"
    if [ -z "$whl" ]; then
        log "$v: no wheel in $DIST"; row - - - - - - - "no wheel in $DIST"; status=1; continue
    fi
    log "$v: $(basename "$whl") with $py"

    # The suite in a venv of its own; not here when the test command already ran it on this
    # CPython from these sources and the wheel is one another version's suite runs on (the
    # stable-ABI wheel): what is left to see then is that the wheel installs and the docs'
    # examples run on it (the tour, below). The block is not indented: it holds heredocs.
    if [[ " ${ZSTDPOOL_SUITE_RAN_ON:-} " == *" $v "* && "$whl" == *-abi3-* ]]; then
        log "$v: the suite ran in the test command on this version; the tour only"
        copy_tree "$dir/src"
        rm -f "$logf" "$dir/junit.xml"
        installed=0 ran=0 passed=- skipped=- failed=-
        note="suite: run by the test command on $v"
    else

    # --- a fresh venv with the wheel ----------------------------------------------------
    venv="$dir/venv"
    "$py" -m venv --clear "$venv"
    vpy="$venv/bin/python"
    "$vpy" -m pip install -q --upgrade pip >"$dir/install.log" 2>&1 || true
    if [ "$v" = "3.14t" ]; then
        # The test and bench extras without the packages that have no wheel here.
        mapfile -t reqs < <("$vpy" - "$ROOT/pyproject.toml" "$FT_EXCLUDE" <<'EOF'
import re
import sys
import tomllib

extras = tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]
exclude = set(sys.argv[2].split())
for req in extras["bench"] + extras["test"]:
    name = re.split(r"[\s<>=!~;\[]", req, maxsplit=1)[0]
    if name != "zstdpool" and name.lower() not in exclude:
        print(req)
EOF
)
        # A failure inside the process substitution above escapes set -e: an empty list
        # would install the wheel alone and skip every peer's tests.
        if [ ${#reqs[@]} -lt 10 ]; then
            log "$v: FAIL could not read the test extras from pyproject.toml (${#reqs[@]} found)"
            row - - - - "$((SECONDS - start))s" - - "extras unreadable"; status=1; continue
        fi
        log "$v: installing the wheel and, from wheels only: ${reqs[*]}"
        install=("$vpy" -m pip install --only-binary=:all: "$whl" "${reqs[@]}")
    else
        install=("$vpy" -m pip install "$whl[test]")
    fi
    if ! "${install[@]}" >>"$dir/install.log" 2>&1; then
        tail -20 "$dir/install.log" >&2
        log "$v: FAIL the install failed (log: $dir/install.log)"
        row - - - - "$((SECONDS - start))s" - - "install failed"; status=1; continue
    fi
    installed=$((SECONDS - start))

    # --- the copy, and the checks before the run -----------------------------------------
    copy_tree "$dir/src"
    env_vars=(ZSTDPOOL_EXPECT_INSTALLED=1)
    [ "$v" != "3.14t" ] || env_vars+=(ZSTDPOOL_EXPECT_FREETHREADED=1)
    if ! (cd "$dir/src" && env "${env_vars[@]}" "$vpy" - "$venv" <<'EOF'
import os
import sys

import zstdpool

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(zstdpool.__file__)
assert where.startswith(venv + os.sep), f"zstdpool imported from {where}, not from {venv}"
line = f"zstdpool {zstdpool.__version__} from {where}"
if os.environ.get("ZSTDPOOL_EXPECT_FREETHREADED") == "1":
    assert not sys._is_gil_enabled(), "the GIL is enabled after import zstdpool"
    line += "; GIL disabled after import"
print(line, file=sys.stderr)
EOF
    ); then
        log "$v: FAIL the installed package does not pass the checks"
        row - - - - "${installed}s" - - "check failed"; status=1; continue
    fi
    missing="$(cd "$dir/src" && "$vpy" - $PEERS <<'EOF'
import importlib.util
import sys


def missing(name: str) -> bool:
    if name == "backports.zstd" and sys.version_info >= (3, 14):
        return False  # compression.zstd is used instead
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:
        return True


print(" ".join(n for n in sys.argv[1:] if missing(n)))
EOF
)"
    [ -z "$missing" ] || log "$v: peers not installed, whose tests skip: $missing"

    # --- the run -----------------------------------------------------------------------
    t=$SECONDS
    rc=0
    # The whole suite runs on two workers too: on 3.14t that is free-threaded code in two
    # processes, each with the GIL off.
    selection=(-n 2)
    if [[ " $FULL_VERSIONS " != *" $v "* ]]; then
        selection=("${QUICK_SKIP[@]}")
        log "$v: the suite without its slowest parts (QUICK_SKIP)"
    fi
    (cd "$dir/src" && env "${env_vars[@]}" "$vpy" -m pytest -p no:cacheprovider -q -rfEs \
        --junitxml="$dir/junit.xml" "${selection[@]}" "${pytest_args[@]}") >"$logf" 2>&1 \
        || rc=$?
    ran=$((SECONDS - t))
    read -r passed skipped failed < <(counts "$vpy" "$logf")
    tail -3 "$logf" | sed "s/^/[test-matrix] $v: /" >&2
    note="log: $logf"
    [ -z "$missing" ] || note="missing peers: $missing; $note"
    if [ "$rc" -ne 0 ]; then
        status=1
        note="pytest exit $rc; $note"
    fi
    fi  # the suite

    # --- the docs' examples (the "tour"), in a fresh venv with only what they import ---
    t=$SECONDS
    tourlog="$dir/tour.log"
    tvenv="$dir/tour-venv"
    tour_reqs=("${TOUR_REQS[@]}")
    tour_pip=()
    if [ "$v" = "3.14t" ]; then
        tour_pip=(--only-binary=:all:)
    else
        tour_reqs+=(polars)
    fi
    if ! { "$py" -m venv --clear "$tvenv" \
            && "$tvenv/bin/python" -m pip install "${tour_pip[@]}" "$whl[dask]" "${tour_reqs[@]}"; \
            } >"$tourlog" 2>&1; then
        tail -20 "$tourlog" >&2
        tour=FAIL
        note="tour: install failed ($tourlog); $note"
    elif (cd "${TMPDIR:-/tmp}" && "$tvenv/bin/python" -I "$dir/src/scripts/docs_examples.py") \
            >>"$tourlog" 2>&1; then  # -I: not the script's folder either
        tour=ok
        tour_skips="$(grep -c '^SKIP ' "$tourlog" || true)"
        [ "$tour_skips" = 0 ] || note="tour: $tour_skips block(s) skipped ($tourlog); $note"
    else
        tail -20 "$tourlog" >&2
        tour=FAIL
        note="tour failed ($tourlog); $note"
    fi
    sed -n '/^\(SKIP\|FAIL\) /p; /^the examples /p' "$tourlog" | sed "s/^/[test-matrix] $v: /" >&2
    [ "$tour" = ok ] || status=1
    tour="$tour $((SECONDS - t))s"

    row "$passed" "$skipped" "$failed" "$tour" "${installed}s" "${ran}s" \
        "$((SECONDS - start))s" "$note"
    if [ -n "${ZSTDPOOL_MATRIX_SUMMARY:-}" ]; then
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$passed" "$skipped" "$failed" \
            "$installed" "$ran" "$((SECONDS - start))" "$tour" "$note" \
            >>"$ZSTDPOOL_MATRIX_SUMMARY"
    fi
done

printf '%-6s %7s %7s %7s %9s %8s %8s %8s  %s\n' python passed skipped failed tour install \
    pytest total note
printf '%s\n' "${rows[@]}"
exit $status
