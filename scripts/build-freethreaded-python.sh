#!/usr/bin/env bash
# Build a free-threaded CPython 3.14 (3.14t, --disable-gil) from source, so the
# wheel can be tested without the GIL. python.org is not reachable from our
# machines, so the source comes from Debian's archive (the python3.14 source
# package's upstream tarball), checked against the suite's signed index.
#
# Usage: scripts/build-freethreaded-python.sh
#   ZSTDPOOL_FT_PREFIX  install prefix (default: ~/.cache/zstdpool/python3.14t)
#   ZSTDPOOL_FT_JOBS    make parallelism (default: 2)
# Prints the interpreter path on its last line. Needs root for apt-get on a
# machine that lacks the build dependencies; Debian bookworm or later.
set -euo pipefail

start=$SECONDS
PREFIX="${ZSTDPOOL_FT_PREFIX:-$HOME/.cache/zstdpool/python3.14t}"
JOBS="${ZSTDPOOL_FT_JOBS:-2}"
PY="$PREFIX/bin/python3.14t"
MIRROR="http://deb.debian.org/debian"
KEYRING="/usr/share/keyrings/debian-archive-keyring.gpg"
# Used when no version from a signed index can be downloaded. The checksum
# is the one in the maintainer-signed python3.14_3.14.7-1.dsc, and equals
# python.org's published SHA256 for Python-3.14.7.tar.xz (Debian ships the
# upstream tarball unchanged). Change both together.
PINNED_VERSION="3.14.7"
PINNED_SHA256="3b48dac8fb59f62eaa67ac83c1eb12bda1b7a08406dd286e252c11a66be27f81"
# The modules the wheel's tests and pip need; the build silently skips any
# whose headers are missing, so this is the real success criterion.
CHECK='import sys, ssl, ctypes, zlib, lzma, bz2, sqlite3; assert not sys._is_gil_enabled()'

log() { printf '[build-ft-python] %s\n' "$*" >&2; }

# Cached: a working interpreter means there is nothing to do.
if [ -x "$PY" ] && "$PY" -c "$CHECK" 2>/dev/null; then
    log "$("$PY" -VV | head -1) already at $PREFIX"
    echo "$PY"
    exit 0
fi

# --- build dependencies -------------------------------------------------------
# Only the headers for ssl, ctypes, zlib, lzma, bz2, sqlite3, readline, uuid,
# zstd (compression.zstd) and curses; no tkinter.
DEPS=(build-essential pkg-config curl ca-certificates xz-utils gpgv
      debian-archive-keyring libssl-dev zlib1g-dev libffi-dev libbz2-dev
      liblzma-dev libsqlite3-dev libreadline-dev libncurses-dev uuid-dev
      libzstd-dev)
# shellcheck source=scripts/debian-packages.sh
source "$(dirname "$0")/debian-packages.sh"
debian_packages "${DEPS[@]}"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/build-ft-python.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

# --- find the tarball and its checksum -----------------------------------------
# Chain of trust: InRelease is signed by the archive keys we already trust,
# it carries Sources.xz's SHA256, and Sources.xz carries the tarball's.
# Returns "VERSION SHA256" on stdout, or fails.
lookup_suite() {
    local suite="$1" d="$WORK/$1" status sums got file sha
    mkdir -p "$d"
    curl -fsSL --retry 3 -o "$d/InRelease" "$MIRROR/dists/$suite/InRelease" || return 1
    status="$(gpgv --status-fd 1 --keyring "$KEYRING" --output "$d/Release" "$d/InRelease" 2>/dev/null)" || true
    # Some signatures may be by keys newer than our keyring; one valid and no
    # bad one is what apt itself accepts.
    if ! grep -q '^\[GNUPG:\] VALIDSIG ' <<<"$status" || grep -q '^\[GNUPG:\] BADSIG ' <<<"$status"; then
        log "$suite: InRelease signature does not verify"
        return 1
    fi
    sums="$(awk '/^SHA256:/{s=1; next} /^[^ ]/{s=0} s && $3 == "main/source/Sources.xz" {print $1}' "$d/Release")"
    [ -n "$sums" ] || return 1
    curl -fsSL --retry 3 -o "$d/Sources.xz" "$MIRROR/dists/$suite/main/source/Sources.xz" || return 1
    got="$(sha256sum "$d/Sources.xz" | cut -d' ' -f1)"
    if [ "$got" != "$sums" ]; then
        log "$suite: Sources.xz checksum mismatch"
        return 1
    fi
    # The python3.14 stanza's Checksums-Sha256 line for the upstream tarball.
    read -r sha file < <(xz -dc "$d/Sources.xz" | awk '
        /^Package: / {p = ($2 == "python3.14")}
        p && /^Checksums-Sha256:/ {c=1; next}
        p && /^[^ ]/ {c=0}
        p && c && $3 ~ /^python3\.14_3\.14[^_]*\.orig\.tar\.xz$/ {print $1, $3; exit}') || return 1
    [ -n "${file:-}" ] || return 1
    file="${file#python3.14_}"
    echo "${file%.orig.tar.xz} $sha"
}

# Candidates, newest first. The mirror does not always hold the source files
# its index lists (an index can run ahead of the pool), so each is tried in
# turn and the pinned one is the last resort.
candidates=()
for suite in sid forky; do
    if res="$(lookup_suite "$suite")"; then
        log "$suite lists python3.14 ${res%% *}"
        candidates+=("$res")
    fi
done
candidates+=("$PINNED_VERSION $PINNED_SHA256")

# --- download and verify ---------------------------------------------------------
# Keep the tarball so a failed build does not download it again.
DL_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/zstdpool/downloads"
mkdir -p "$DL_DIR"
verified() { echo "$2  $1" | sha256sum -c --quiet - >/dev/null 2>&1; }
VERSION=""
for c in "${candidates[@]}"; do
    read -r v sha <<<"$c"
    TARBALL="$DL_DIR/python3.14_${v}.orig.tar.xz"
    if ! verified "$TARBALL" "$sha"; then
        log "downloading $(basename "$TARBALL")"
        if ! curl -fsSL --retry 3 -o "$TARBALL.part" \
                "$MIRROR/pool/main/p/python3.14/$(basename "$TARBALL")"; then
            log "not available from the mirror"
            rm -f "$TARBALL.part"
            continue
        fi
        mv "$TARBALL.part" "$TARBALL"
    fi
    if verified "$TARBALL" "$sha"; then
        VERSION="$v"
        break
    fi
    # Never build something whose checksum does not match.
    log "SHA256 mismatch for $(basename "$TARBALL"); discarding it"
    rm -f "$TARBALL"
done
if [ -z "$VERSION" ]; then
    log "no verified CPython 3.14 source tarball could be downloaded"
    exit 1
fi

# --- build --------------------------------------------------------------------------
mkdir -p "$WORK/src"
tar -xJf "$TARBALL" -C "$WORK/src" --strip-components=1
cd "$WORK/src"
log "configuring CPython $VERSION (free-threaded) for $PREFIX"
# No PGO/LTO: they multiply the build time on 2 cores for speed that running
# tests does not need. No test modules (Lib/test, _testcapi...): zstdpool's
# tests do not use them, and building, byte-compiling and installing them
# only adds time.
./configure --disable-gil --disable-test-modules --prefix="$PREFIX" \
    --with-ensurepip=install \
    >"$WORK/configure.log" 2>&1 || {
    tail -40 "$WORK/configure.log" >&2; exit 1; }
log "building with make -j$JOBS (niced, so other work on the machine keeps going)"
nice -n 10 make -j"$JOBS" >"$WORK/make.log" 2>&1 || { tail -60 "$WORK/make.log" >&2; exit 1; }
# Modules that failed or were skipped for missing headers are listed here.
grep -A3 -E 'necessary bits to build|Failed to build these modules|Following modules' "$WORK/make.log" >&2 || true
nice -n 10 make install >"$WORK/install.log" 2>&1 || { tail -60 "$WORK/install.log" >&2; exit 1; }

# --- check ------------------------------------------------------------------------
if ! "$PY" -c "$CHECK"; then
    log "$PY does not pass: $CHECK"
    exit 1
fi
elapsed=$((SECONDS - start))
log "$("$PY" -VV | head -1) installed at $PREFIX in $((elapsed / 60))m$((elapsed % 60))s; GIL check passed"
echo "$PY"
