# The interpreters the wheels are built for and tested on; sourced by build-wheels.sh and
# test-matrix.sh. FT_PREFIX must be set: where build-freethreaded-python.sh installed 3.14t.

# An interpreter for a version (3.10 ... 3.13 from pyenv, its newest patch; 3.14t from
# FT_PREFIX), or the path given when it is one. Fails when there is none.
interpreter() {
    local v="$1" d
    if [ -x "$v" ]; then echo "$v"; return; fi
    if [ "$v" = "3.14t" ]; then
        [ -x "$FT_PREFIX/bin/python3.14t" ] || return 1
        echo "$FT_PREFIX/bin/python3.14t"
        return
    fi
    d="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".* 2>/dev/null | sort -V | tail -1)"
    [ -n "$d" ] && [ -x "$d/bin/python$v" ] || return 1
    echo "$d/bin/python$v"
}
