# Installs the Debian packages named that are missing (with sudo when not root); sourced by
# the scripts that need packages from Debian's archive. Needs a `log` function.
debian_packages() {
    local p missing=() sudo=""
    for p in "$@"; do
        if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
            missing+=("$p")
        fi
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    log "installing: ${missing[*]}"
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    # A third-party apt source that cannot be reached makes update exit non-zero although
    # Debian's own lists were fetched; install tells.
    $sudo apt-get update -qq >&2 || log "apt-get update reported errors; trying the install anyway"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >&2
}
