# The build tools of the wheels and the cross checks, pinned, in a cache venv; sourced by
# build-wheels.sh and check-macos.sh (after pythons.sh). A new maturin or zig release changes
# what is built: change them on purpose.
MATURIN_VERSION="1.16.0"
ZIGLANG_VERSION="0.17.1"
AUDITWHEEL_VERSION="6.8.2"
TOOLS="${ZSTDPOOL_TOOLS_VENV:-$HOME/.cache/zstdpool/wheel-tools-m$MATURIN_VERSION-z$ZIGLANG_VERSION-a$AUDITWHEEL_VERSION}"

# Installs maturin, ziglang and auditwheel into $TOOLS if they are not there, and puts its bin
# first on PATH (maturin finds zig through the ziglang module of the Python it runs under).
wheel_tools() {
    if [ ! -x "$TOOLS/bin/maturin" ] || [ ! -x "$TOOLS/bin/auditwheel" ] \
            || ! "$TOOLS/bin/python" -c 'import ziglang' 2>/dev/null; then
        local base
        base="$(interpreter 3.11 || command -v python3)"
        printf '[wheel-tools] installing maturin %s, ziglang %s and auditwheel %s into %s\n' \
            "$MATURIN_VERSION" "$ZIGLANG_VERSION" "$AUDITWHEEL_VERSION" "$TOOLS" >&2
        "$base" -m venv --clear "$TOOLS"
        "$TOOLS/bin/pip" install -q "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION" \
            "auditwheel==$AUDITWHEEL_VERSION"
    fi
    export PATH="$TOOLS/bin:$PATH"
}
