#!/usr/bin/env bash
# Build the sdist and release wheels of zstdpool into dist/, and check each wheel with
# `auditwheel show`. What ships: cp310, one stable-ABI wheel (abi3) for CPython 3.11 and later,
# and cp314t (free-threading has no stable ABI).
#
# Usage: scripts/build-wheels.sh [--freethreaded] [--no-sdist] [PYTHON...]
#   PYTHON          a version (3.10, 3.12, 3.14t), `abi3` (the stable-ABI wheel, built with
#                   3.11) or an interpreter's path; default: 3.10 abi3, from pyenv
#                   (~/.pyenv/versions/3.X.*). 3.14t is the free-threaded interpreter that
#                   scripts/build-freethreaded-python.sh installs.
#   --freethreaded  add 3.14t to the default list
#   --no-sdist      wheels only
# Environment:
#   ZSTDPOOL_DIST         output directory (default: dist)
#   CARGO_TARGET_DIR      default: $ZSTDPOOL_CARGO_CACHE/wheels (.ci/run sets that, to a cache
#                         kept between runs), else target/wheels: never the development
#                         builds' directory, whose lock these builds would wait for and whose
#                         artifacts they would invalidate
#   ZSTDPOOL_TARGET       a Rust target to cross-build for (aarch64-unknown-linux-gnu; default:
#                         this machine's), with zig and no native fallback; the target is
#                         added with rustup if missing
#   ZSTDPOOL_ZIG          auto (default): `maturin --zig --compatibility manylinux_2_28`, and
#                         the native tag for this and every later wheel if zig fails;
#                         yes: zig or fail; no: native only
#   ZSTDPOOL_WHEEL_CC     the C compiler of a zig build for this machine's own target
#                         (default: gcc; empty: zig's clang; zig links either way)
#   ZSTDPOOL_NICE         niceness of the builds (default: 15)
#   ZSTDPOOL_TOOLS_VENV   where maturin, ziglang and auditwheel are installed when missing
#                         (default: ~/.cache/zstdpool/wheel-tools-<pins>)
#   ZSTDPOOL_FT_PREFIX    prefix of the free-threaded interpreter (as for
#                         build-freethreaded-python.sh)
#   ZSTDPOOL_WHEEL_DONE_DIR  if set, a file named after each version is written there when
#                         its wheel is done: "ok <wheel path>" or "fail" (scripts/matrix.sh
#                         starts testing a wheel while the next one builds)
# Prints one line per wheel: file, tag mode (zig or native), auditwheel's tag, build time.
# Exits non-zero if a build fails or a wheel is not a manylinux wheel without external
# libraries.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

MANYLINUX="manylinux_2_28"

DIST="${ZSTDPOOL_DIST:-dist}"
mkdir -p "$DIST"
DIST="$(cd "$DIST" && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${ZSTDPOOL_CARGO_CACHE:-$ROOT/target}/wheels}"
ZIG_MODE="${ZSTDPOOL_ZIG:-auto}"
TARGET="${ZSTDPOOL_TARGET:-}"
target_args=()
if [ -n "$TARGET" ]; then
    target_args=(--target "$TARGET")
    ZIG_MODE=yes
    rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET" >&2
fi
NICE="${ZSTDPOOL_NICE:-15}"
FT_PREFIX="${ZSTDPOOL_FT_PREFIX:-$HOME/.cache/zstdpool/python3.14t}"

log() { printf '[build-wheels] %s\n' "$*" >&2; }

sdist=1
versions=()
for arg in "$@"; do
    case "$arg" in
        --freethreaded) ft=1 ;;
        --no-sdist) sdist=0 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) log "unknown option $arg"; exit 2 ;;
        *) versions+=("$arg") ;;
    esac
done
[ ${#versions[@]} -gt 0 ] || versions=(3.10 abi3)
[ -z "${ft:-}" ] || versions+=(3.14t)

# shellcheck source=scripts/pythons.sh
source "$ROOT/scripts/pythons.sh"

# --- tools ---------------------------------------------------------------------------------
# shellcheck source=scripts/wheel-tools.sh
source "$ROOT/scripts/wheel-tools.sh"
wheel_tools
MATURIN="$TOOLS/bin/maturin"
AUDITWHEEL="$TOOLS/bin/auditwheel"

# --- checks --------------------------------------------------------------------------------
# Shared libraries a manylinux wheel may link against (the policy's list that a Rust
# extension can need). zstd must not be one of them: it is linked statically.
ALLOWED_NEEDED="libc.so.6 libm.so.6 libgcc_s.so.1 libpthread.so.0 libdl.so.2 librt.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1"

check_wheel() {
    local whl="$1" out tag claimed lib so tmp
    out="$("$AUDITWHEEL" show "$whl" 2>&1)" || { echo "$out" >&2; return 1; }
    echo "$out" | sed 's/^/    auditwheel: /' >&2
    tag="$(echo "$out" | tr '\n' ' ' | grep -oE 'consistent with the following platform tag: "[^"]+"' \
        | grep -oE '"[^"]+"' | tr -d '"')"
    case "$tag" in
        manylinux*) ;;
        *) log "FAIL $whl: auditwheel reports platform tag '${tag:-none}', not a manylinux tag"
           return 1 ;;
    esac
    if echo "$out" | grep -q 'external shared libraries are required'; then
        if ! echo "$out" | tr '\n' ' ' | grep -qE 'are required by the wheel: *\{ *\}'; then
            log "FAIL $whl: needs shared libraries outside the manylinux policy"
            return 1
        fi
    fi
    # The tag the file claims must not be more compatible than what auditwheel found.
    claimed="$(basename "$whl" .whl | grep -oE 'manylinux_[0-9]+_[0-9]+' | head -1)"
    if [ -z "$claimed" ]; then
        log "FAIL $whl: the file name carries no manylinux tag"
        return 1
    fi
    local policy="${tag%_x86_64}"
    policy="${policy%_aarch64}"
    if [ "$(printf '%s\n%s\n' "$policy" "$claimed" | sort -V | tail -1)" != "$claimed" ]; then
        log "FAIL $whl: claims $claimed but auditwheel says $tag"
        return 1
    fi
    # Belt and braces: the extension's DT_NEEDED entries, read directly.
    # (Called under `if`, where set -e does not apply: each step checks its own failure.)
    tmp="$(mktemp -d)"
    if ! "$TOOLS/bin/python" -m zipfile -e "$whl" "$tmp" >/dev/null; then
        log "FAIL $whl: cannot unpack it"; rm -rf "$tmp"; return 1
    fi
    sos="$(find "$tmp" -name '*.so')"
    if [ -z "$sos" ]; then
        log "FAIL $whl: holds no extension module"; rm -rf "$tmp"; return 1
    fi
    for so in $sos; do
        if ! needed="$(readelf -d "$so")"; then
            log "FAIL $whl: readelf cannot read $(basename "$so")"; rm -rf "$tmp"; return 1
        fi
        for lib in $(printf '%s\n' "$needed" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            case " $ALLOWED_NEEDED " in
                *" $lib "*) ;;
                *) log "FAIL $whl: $(basename "$so") needs $lib"; rm -rf "$tmp"; return 1 ;;
            esac
        done
    done
    rm -rf "$tmp"
    WHEEL_TAG="$tag"
}

# --- build ---------------------------------------------------------------------------------
mark() {
    [ -z "${ZSTDPOOL_WHEEL_DONE_DIR:-}" ] && return 0
    mkdir -p "$ZSTDPOOL_WHEEL_DONE_DIR"
    echo "$2" >"$ZSTDPOOL_WHEEL_DONE_DIR/$1.tmp"
    mv "$ZSTDPOOL_WHEEL_DONE_DIR/$1.tmp" "$ZSTDPOOL_WHEEL_DONE_DIR/$1"
}
summary=()
status=0
if [ "$sdist" = 1 ]; then
    t=$SECONDS
    nice -n "$NICE" "$MATURIN" sdist --out "$DIST" >&2
    summary+=("$(printf '%-58s %-7s %-24s %4ds' "$(ls -t "$DIST"/zstdpool-*.tar.gz | head -1 | xargs basename)" sdist - $((SECONDS - t)))")
fi

# The features pyproject.toml's [tool.maturin] builds every wheel with, comma-separated.
wheel_features() {
    "$TOOLS/bin/python" - "$ROOT/pyproject.toml" <<'PYTHON'
import sys

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import pip._vendor.tomli as tomllib

print(",".join(tomllib.load(open(sys.argv[1], "rb"))["tool"]["maturin"].get("features", [])))
PYTHON
}

# The C compiler of the C dependencies (zstd above all) in a zig build. zig links, for
# manylinux_2_28's glibc; its clang compiling zstd made decompression of a 4 MiB frame about
# 25% slower than the same code compiled by gcc, and a 1 KiB compress execute 3.7% more
# instructions (benchmarks/RESULTS.md#wheel-compiler). So for this machine's own target, gcc
# compiles the C code (cc-rs reads the target's CC_<triple> before what maturin sets), and
# auditwheel still checks the wheel's glibc symbols below. A cross build (ZSTDPOOL_TARGET)
# keeps zig's clang: no cross gcc is installed.
cc_env=()
wheel_cc="${ZSTDPOOL_WHEEL_CC-gcc}"
if [ -z "$TARGET" ] && [ -n "$wheel_cc" ]; then
    if command -v "$wheel_cc" >/dev/null; then
        triple="$(rustc -vV | sed -n 's/^host: //p')"
        cc_env=("CC_$triple=$wheel_cc")
    else
        log "no $wheel_cc: zig's clang compiles the C code"
    fi
fi

for v in "${versions[@]}"; do
    features=()
    if [ "$v" = abi3 ]; then
        # --features replaces pyproject.toml's [tool.maturin] features, so they are named
        # again: without alloc-stats, memory_stats() of the wheel would count nothing.
        features=(--features "$(wheel_features),abi3")
        py="$(interpreter 3.11)" || py=""
    else
        py="$(interpreter "$v")" || py=""
    fi
    if [ -z "$py" ]; then
        log "FAIL no interpreter for $v"
        summary+=("$(printf '%-58s %-7s %-24s %4s' "($v)" - "no interpreter" -)")
        status=1
        mark "$v" fail
        continue
    fi
    t=$SECONDS
    buildlog="$(mktemp)"
    mode=""
    if [ "$ZIG_MODE" != no ]; then
        log "$v: maturin build --release ${target_args[*]} --zig --compatibility $MANYLINUX ($py${cc_env[*]:+, ${cc_env[*]}})"
        if env "${cc_env[@]}" nice -n "$NICE" "$MATURIN" build --release --interpreter "$py" \
                --out "$DIST" "${features[@]}" "${target_args[@]}" --zig \
                --compatibility "$MANYLINUX" 2>&1 \
                | tee "$buildlog" >&2; then
            mode="zig"
        elif [ "$ZIG_MODE" = yes ]; then
            log "FAIL $v: the zig build failed"
            status=1
            summary+=("$(printf '%-58s %-7s %-24s %4ds' "($v)" zig "build failed" $((SECONDS - t)))")
            mark "$v" fail
            continue
        else
            log "$v: the zig build failed; building with the native toolchain for this and every later wheel"
            ZIG_MODE=no
        fi
    fi
    if [ -z "$mode" ]; then
        log "$v: maturin build --release ($py), native toolchain"
        if nice -n "$NICE" "$MATURIN" build --release --interpreter "$py" --out "$DIST" \
                "${features[@]}" 2>&1 | tee "$buildlog" >&2; then
            mode="native"
        else
            log "FAIL $v: the build failed"
            status=1
            summary+=("$(printf '%-58s %-7s %-24s %4ds' "($v)" native "build failed" $((SECONDS - t)))")
            mark "$v" fail
            continue
        fi
    fi
    # maturin's last words: "Built wheel for CPython 3.10 to /path/to/the.whl".
    whl="$(sed -n 's/.*Built wheel.* to \(.*\.whl\).*/\1/p' "$buildlog" | tail -1)"
    rm -f "$buildlog"
    WHEEL_TAG="-"
    if check_wheel "$whl"; then
        mark "$v" "ok $whl"
    else
        status=1
        WHEEL_TAG="FAILED-CHECK"
        mark "$v" fail
    fi
    summary+=("$(printf '%-58s %-7s %-24s %4ds' "$(basename "$whl")" "$mode" "$WHEEL_TAG" $((SECONDS - t)))")
done

printf '%-58s %-7s %-24s %5s\n' file mode "auditwheel tag" time
printf '%s\n' "${summary[@]}"
exit $status
