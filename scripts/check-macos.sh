#!/usr/bin/env bash
# macOS, compile-checked from Linux: clippy, with -D warnings, over the core and the bindings
# (all targets: the core's tests too) for aarch64-apple-darwin and x86_64-apple-darwin. The
# C they build (zstd, ring) is compiled by zig's clang against the macOS headers zig ships.
# Nothing is linked or run: no macOS machine is available here. What this catches is code
# that builds on Linux alone (a libc call or constant macOS lacks, a cfg without its
# fallback); the fallbacks themselves run on Linux in the test command (the core's
# `portable` feature).
#
# Usage: scripts/check-macos.sh [TARGET...]   (default: both targets)
# Environment:
#   CARGO_TARGET_DIR   default: $ZSTDPOOL_CARGO_CACHE/macos (.ci/run sets that, to a cache kept
#                      between runs), else target/macos, apart from the other builds' caches
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
FT_PREFIX="${ZSTDPOOL_FT_PREFIX:-$HOME/.cache/zstdpool/python3.14t}"
# shellcheck source=scripts/pythons.sh
source "$ROOT/scripts/pythons.sh"
# shellcheck source=scripts/wheel-tools.sh
source "$ROOT/scripts/wheel-tools.sh"
wheel_tools

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-${ZSTDPOOL_CARGO_CACHE:-$ROOT/target}/macos}"
# pyo3's build script needs no macOS interpreter for a check, only the version it targets.
export PYO3_CROSS_PYTHON_VERSION=3.11
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(aarch64-apple-darwin x86_64-apple-darwin)

log() { printf '[check-macos] %s\n' "$*" >&2; }

# zig's cc and ar for a target, as single executables (what cc-rs takes from CC_<target>).
# cc-rs adds Apple's -arch and target flags, which zig's driver does not take: they are
# dropped, and zig's own -target says the same.
# Named by zig's version: cc-rs sees only the wrapper's path, and a new zig behind the same
# path would leave the C objects of the old one in a kept target directory.
wrappers="$CARGO_TARGET_DIR/zig-$ZIGLANG_VERSION"
mkdir -p "$wrappers"
status=0
for t in "${targets[@]}"; do
    case "$t" in
        aarch64-apple-darwin) zt=aarch64-macos ;;
        x86_64-apple-darwin) zt=x86_64-macos ;;
        *) log "not a macOS target: $t"; exit 2 ;;
    esac
    rustup target list --installed | grep -qx "$t" || rustup target add "$t" >&2
    cat >"$wrappers/cc-$t" <<EOF
#!/usr/bin/env bash
args=()
skip=0
for a in "\$@"; do
    if [ "\$skip" = 1 ]; then skip=0; continue; fi
    case "\$a" in
        -arch|-target) skip=1 ;;
        --target=*|-mmacosx-version-min=*|-mmacos-version-min=*) ;;
        *) args+=("\$a") ;;
    esac
done
exec "$TOOLS/bin/python" -m ziglang cc -target $zt "\${args[@]}"
EOF
    printf '#!/bin/sh\nexec "%s/bin/python" -m ziglang ar "$@"\n' "$TOOLS" >"$wrappers/ar-$t"
    chmod +x "$wrappers/cc-$t" "$wrappers/ar-$t"
    var="${t//-/_}"
    log "$t: cargo clippy --workspace --all-targets -- -D warnings"
    start=$SECONDS
    if env "CC_$var=$wrappers/cc-$t" "AR_$var=$wrappers/ar-$t" \
            cargo clippy --workspace --all-targets --target "$t" --locked -- -D warnings; then
        log "$t: ok ($((SECONDS - start))s)"
    else
        log "$t: FAILED ($((SECONDS - start))s)"
        status=1
    fi
done
exit $status
