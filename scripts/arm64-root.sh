#!/usr/bin/env bash
# Prepare a Debian bookworm arm64 root filesystem and run commands in it through qemu-user
# emulation, so that the aarch64 wheel can be installed and tested (with pyarrow's aarch64
# wheel from PyPI) on an x86_64 machine without arm64 hardware. The root is made by
# debootstrap from Debian's archive, holds python3 and python3-venv (a venv inside gets its
# pip from Debian's wheels; the root has no system pip), and is cached: a root whose stamp
# names this script's RECIPE is used as it is. It is built in a temporary directory beside
# it and renamed into place when complete, so an interrupted build never looks complete.
# Emulation comes from qemu-user-static and a binfmt_misc handler for aarch64 ELF files
# registered with the F (fix-binary) flag, so the kernel runs the host's qemu and nothing
# has to be copied into the root (if running a binary inside fails all the same, qemu is
# copied in). Needs root (re-runs itself with sudo) and Debian bookworm or later.
#
# Usage: scripts/arm64-root.sh [create]        make the root if needed; prints its path last
#        scripts/arm64-root.sh run [--] CMD...   run CMD inside (makes the root if needed)
#        scripts/arm64-root.sh remove           delete the root
# `run` bind-mounts /proc, /sys and /dev (with /dev/pts and /dev/shm) and the ZSTDPOOL_ARM64_BIND
# directories, copies /etc/resolv.conf in, and runs `chroot ROOT CMD...` as root with a clean
# environment (HOME=/root, LANG=C.UTF-8, a standard PATH, proxy and some PIP_ variables, and
# those ZSTDPOOL_ARM64_ENV names); use `run -- env VAR=value CMD...` for others. The
# mounts are made in a private mount namespace (unshare), so they vanish with the command
# whatever happens to it, and are unmounted on exit as well. Exits with CMD's status.
# Example:
#   ZSTDPOOL_ARM64_BIND="$PWD/dist:/dist:ro" scripts/arm64-root.sh run -- sh -c \
#     'python3 -m venv /opt/venv && /opt/venv/bin/pip install /dist/*aarch64*.whl pytest'
# Environment:
#   ZSTDPOOL_ARM64_ROOT    the root (default: ~/.cache/zstdpool/arm64-bookworm)
#   ZSTDPOOL_ARM64_BIND    whitespace-separated HOST[:INSIDE[:ro]] directories (or files) to
#                          bind-mount for `run`; INSIDE defaults to HOST
#   ZSTDPOOL_ARM64_CWD     the directory inside where CMD starts (default: /)
#   ZSTDPOOL_ARM64_ENV     names of further host variables to pass to CMD
#   ZSTDPOOL_ARM64_MIRROR  Debian mirror (default: http://deb.debian.org/debian)
# CA certificates the host trusts locally (/usr/local/share/ca-certificates, e.g. a
# TLS-intercepting proxy's) are added to the root's bundle, /etc/ssl/certs/ca-certificates.crt,
# which the system's openssl and the pip of a venv (Debian's wheel) use, so pip works behind
# such a proxy.
set -euo pipefail

SUITE="bookworm"
INCLUDE="python3,python3-venv,ca-certificates"
# Change RECIPE whenever the root's contents would change (suite, packages, the steps
# below); roots with another recipe in their stamp are rebuilt.
RECIPE="1 $SUITE minbase $INCLUDE"
ROOTDIR="${ZSTDPOOL_ARM64_ROOT:-$HOME/.cache/zstdpool/arm64-bookworm}"
MIRROR="${ZSTDPOOL_ARM64_MIRROR:-http://deb.debian.org/debian}"
KEYRING="/usr/share/keyrings/debian-archive-keyring.gpg"
STAMP=".zstdpool-arm64-root"
BINFMT="/proc/sys/fs/binfmt_misc"
# Debian's qemu-aarch64 entry (/usr/share/binfmts/qemu-aarch64), for when update-binfmts is
# missing: aarch64 ELF executables and shared objects.
AARCH64_MAGIC='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
AARCH64_MASK='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
# Passed to CMD when set on the host, besides ZSTDPOOL_ARM64_ENV's names.
PASS_ENV="TERM CI GITHUB_ACTIONS http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY
PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_DEFAULT_TIMEOUT PIP_DISABLE_PIP_VERSION_CHECK"

log() { printf '[arm64-root] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

cmd="${1:-create}"
[ $# -eq 0 ] || shift
case "$cmd" in
    create|remove) [ $# -eq 0 ] || die "$cmd takes no arguments" ;;
    run) [ "${1:-}" != "--" ] || shift; [ $# -gt 0 ] || die "usage: $0 run [--] CMD..." ;;
    -h|--help|help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown command $cmd (create, run, remove; --help)" ;;
esac

if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "needs root (mount, chroot, debootstrap)"
    pass=("ZSTDPOOL_ARM64_ROOT=$ROOTDIR")
    for v in ZSTDPOOL_ARM64_BIND ZSTDPOOL_ARM64_CWD ZSTDPOOL_ARM64_ENV ZSTDPOOL_ARM64_MIRROR \
             $PASS_ENV ${ZSTDPOOL_ARM64_ENV:-}; do
        [ -z "${!v+x}" ] || pass+=("$v=${!v}")
    done
    exec sudo env "${pass[@]}" bash "$0" "$cmd" "$@"
fi

# --- cleanup: mounts first, then a half-built root --------------------------------------
MOUNTED=()
PARTIAL=""
# Unmount everything mounted at or below $1 (deepest first), so that rm -rf can never reach
# through a leftover bind mount into the host.
umount_under() {
    local dir m
    dir="$(realpath -m "$1")"
    awk -v d="$dir" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo \
        | sort -r | while read -r m; do
            m="$(printf '%b' "$m")"  # mountinfo writes a space as \040
            umount "$m" 2>/dev/null || umount -l "$m" || log "could not unmount $m"
        done
}
remove_tree() {
    umount_under "$1"
    rm -rf --one-file-system "$1"
}
# shellcheck disable=SC2317  # reached through the trap
cleanup() {
    local i
    for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do
        umount -R "${MOUNTED[i]}" 2>/dev/null || umount -R -l "${MOUNTED[i]}" \
            || log "could not unmount ${MOUNTED[i]}"
    done
    MOUNTED=()
    if [ -n "$PARTIAL" ]; then
        log "removing the incomplete $PARTIAL"
        remove_tree "$PARTIAL" || log "could not remove it; the next build will"
        rm -f "$PARTIAL.log"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$cmd" = remove ]; then
    if [ -e "$ROOTDIR" ]; then remove_tree "$ROOTDIR"; log "removed $ROOTDIR"; fi
    exit 0
fi

# --- host tools ----------------------------------------------------------------------------
# shellcheck source=scripts/debian-packages.sh
source "$(dirname "$0")/debian-packages.sh"
debian_packages debootstrap qemu-user-static binfmt-support debian-archive-keyring

# --- binfmt_misc ---------------------------------------------------------------------------
# In a container without systemd nothing mounts binfmt_misc or registers the handlers that
# qemu-user-static ships, and a handler registered by someone else may lack the F flag.
handler_ok() {
    local h="$BINFMT/qemu-aarch64"
    [ -r "$h" ] && grep -qx enabled "$h" && grep -q '^flags:.*F' "$h"
}
ensure_binfmt() {
    if [ ! -e "$BINFMT/register" ]; then
        log "mounting binfmt_misc"
        mount -t binfmt_misc binfmt_misc "$BINFMT" || die "cannot mount binfmt_misc at $BINFMT"
    fi
    handler_ok && return 0
    if [ -e "$BINFMT/qemu-aarch64" ]; then
        log "replacing the qemu-aarch64 handler (disabled or without the F flag)"
        echo -1 >"$BINFMT/qemu-aarch64"
    fi
    if command -v update-binfmts >/dev/null && [ -e /usr/share/binfmts/qemu-aarch64 ]; then
        # Debian's entry: fix_binary yes, so flags F and P (preserve argv[0]).
        update-binfmts --enable qemu-aarch64 >&2 || true
    fi
    if ! handler_ok; then
        [ ! -e "$BINFMT/qemu-aarch64" ] || echo -1 >"$BINFMT/qemu-aarch64"
        printf ':qemu-aarch64:M::%s:%s:%s:F' "$AARCH64_MAGIC" "$AARCH64_MASK" \
            "$(command -v qemu-aarch64-static)" >"$BINFMT/register"
    fi
    handler_ok || die "could not register the qemu-aarch64 binfmt_misc handler with flag F"
    log "qemu-aarch64 handler: $(grep -E '^(interpreter|flags)' "$BINFMT/qemu-aarch64" | tr '\n' ' ')"
}
# If the kernel cannot run an aarch64 binary in the root (no F flag support), put the
# interpreter inside at the path the handler names.
ensure_runnable() {
    local r="$1" interp
    chroot "$r" /bin/true 2>/dev/null && return 0
    interp="$(sed -n 's/^interpreter //p' "$BINFMT/qemu-aarch64")"
    log "running $r/bin/true failed; copying qemu into the root ($interp)"
    mkdir -p "$r$(dirname "$interp")" "$r/usr/bin"
    cp -L "$interp" "$r$interp"
    cp -L "$(command -v qemu-aarch64-static)" "$r/usr/bin/qemu-aarch64-static"
    chroot "$r" /bin/true || die "cannot run aarch64 binaries in $r even with qemu inside"
}
ensure_binfmt

# --- the root --------------------------------------------------------------------------------
root_ok() { [ -f "$ROOTDIR/$STAMP" ] && [ "$(cat "$ROOTDIR/$STAMP")" = "$RECIPE" ]; }

# Trust the host's local CAs inside. Only when they differ from the root's copy, since
# update-ca-certificates under emulation takes seconds.
sync_cas() {
    local r="$1" src=/usr/local/share/ca-certificates dst="$1/usr/local/share/ca-certificates"
    if [ -d "$src" ] && [ -n "$(ls -A "$src")" ]; then
        diff -rq "$src" "$dst" >/dev/null 2>&1 && return 0
        log "trusting the host's local CAs inside: $(ls "$src" | tr '\n' ' ')"
        rm -rf "$dst"; cp -rL "$src" "$dst"
    elif [ -n "$(ls -A "$dst" 2>/dev/null)" ]; then
        rm -rf "${dst:?}"/*
    else
        return 0
    fi
    # Takes ~45 s under emulation; says "rehash: warning: skipping ca-certificates.crt" on success.
    local out
    if ! out="$(chroot "$r" /usr/sbin/update-ca-certificates --fresh 2>&1)"; then
        printf '%s\n' "$out" >&2
        die "update-ca-certificates failed"
    fi
}

create_root() {
    local start=$SECONDS parent tmp old=""
    parent="$(dirname "$ROOTDIR")"
    mkdir -p "$parent"
    tmp="$(mktemp -d "$ROOTDIR.tmp.XXXXXX")"
    PARTIAL="$tmp"
    chmod 755 "$tmp"  # mktemp made it 0700; it becomes the root's /
    log "debootstrap $SUITE arm64 ($INCLUDE) into $tmp"
    # In its own mount namespace when possible, so that the /proc and /sys it mounts inside
    # cannot outlive it.
    local ns=()
    if unshare --mount --propagation private true 2>/dev/null; then
        ns=(unshare --mount --propagation private)
    fi
    if ! "${ns[@]}" debootstrap --arch=arm64 --variant=minbase --include="$INCLUDE" \
            --keyring="$KEYRING" "$SUITE" "$tmp" "$MIRROR" >"$tmp.log" 2>&1; then
        tail -30 "$tmp.log" >&2
        [ ! -f "$tmp/debootstrap/debootstrap.log" ] || tail -30 "$tmp/debootstrap/debootstrap.log" >&2
        rm -f "$tmp.log"
        die "debootstrap failed"
    fi
    rm -f "$tmp.log"
    log "debootstrap took $((SECONDS - start))s"
    ensure_runnable "$tmp"
    rm -f "$tmp"/var/cache/apt/archives/*.deb
    cat >"$tmp/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://deb.debian.org/debian-security $SUITE-security main
EOF
    sync_cas "$tmp"
    chroot "$tmp" /usr/bin/python3 -c \
        'import venv, ensurepip, ssl, platform; assert platform.machine() == "aarch64"' \
        || die "python3 in the new root does not work"
    printf '%s\n' "$RECIPE" >"$tmp/$STAMP"
    if [ -e "$ROOTDIR" ]; then
        old="$ROOTDIR.old.$$"
        mv "$ROOTDIR" "$old"
    fi
    mv "$tmp" "$ROOTDIR"
    PARTIAL=""
    if [ -n "$old" ]; then remove_tree "$old"; fi
    log "$ROOTDIR ready in $((SECONDS - start))s ($(du -sh "$ROOTDIR" | cut -f1))"
}

ensure_root() {
    root_ok && return 0
    # One builder at a time; the second finds the root made when it gets the lock.
    mkdir -p "$(dirname "$ROOTDIR")"
    exec 9>"$ROOTDIR.lock"
    flock 9
    if ! root_ok; then
        local stale
        for stale in "$ROOTDIR".tmp.* "$ROOTDIR".old.*; do
            [ -d "$stale" ] || continue
            log "removing $stale, left by an interrupted run"
            remove_tree "$stale"
        done
        rm -f "$ROOTDIR".tmp.*.log
        [ ! -e "$ROOTDIR" ] || log "$ROOTDIR is incomplete or of another recipe; rebuilding"
        create_root
    fi
    exec 9>&-
}

if [ "$cmd" = create ]; then
    ensure_root
    ensure_runnable "$ROOTDIR"
    log "$ROOTDIR: $(cat "$ROOTDIR/etc/debian_version") arm64"
    echo "$ROOTDIR"
    exit 0
fi

# --- run ---------------------------------------------------------------------------------------
# Private mount namespace: the mounts below are invisible to the host and disappear with the
# last process inside, even if this script is killed. The trap unmounts them anyway.
if [ -z "${_ZSTDPOOL_ARM64_NS:-}" ] && unshare --mount --propagation private true 2>/dev/null; then
    ensure_root
    exec env _ZSTDPOOL_ARM64_NS=1 unshare --mount --propagation private bash "$0" run -- "$@"
fi
ensure_root
ensure_runnable "$ROOTDIR"
sync_cas "$ROOTDIR"
R="$ROOTDIR"

bind() {  # bind SRC DST [ro]: recursive, and slave so unmounting never reaches the host
    local src="$1" dst="$R$2"
    if [ -d "$src" ]; then
        mkdir -p "$dst"
    else
        mkdir -p "$(dirname "$dst")"
        [ -e "$dst" ] || : >"$dst"
    fi
    mount --rbind "$src" "$dst"
    MOUNTED+=("$dst")
    mount --make-rslave "$dst"
    [ "${3:-}" != ro ] || mount -o remount,bind,ro "$dst"
}
mount -t proc proc "$R/proc"
MOUNTED+=("$R/proc")
bind /sys /sys
bind /dev /dev
read -ra binds <<<"${ZSTDPOOL_ARM64_BIND:-}"
for spec in "${binds[@]}"; do
    IFS=: read -r src dst opt <<<"$spec"
    [ -e "$src" ] || die "ZSTDPOOL_ARM64_BIND: $src does not exist"
    case "${opt:-}" in ""|ro|rw) ;; *) die "ZSTDPOOL_ARM64_BIND: unknown option $opt in $spec" ;; esac
    bind "$(realpath "$src")" "${dst:-$src}" "${opt:-}"
done
rm -f "$R/etc/resolv.conf"
cp -L /etc/resolv.conf "$R/etc/resolv.conf"

envs=(HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
for v in $PASS_ENV ${ZSTDPOOL_ARM64_ENV:-}; do
    [ -z "${!v+x}" ] || envs+=("$v=${!v}")
done
pre=()
[ -z "${ZSTDPOOL_ARM64_CWD:-}" ] || pre=(/usr/bin/env -C "$ZSTDPOOL_ARM64_CWD")
rc=0
env -i "${envs[@]}" chroot "$R" "${pre[@]}" "$@" || rc=$?
exit "$rc"
