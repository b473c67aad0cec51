#!/bin/sh
# Compile a C++ agent inside the build container: with no network, with the Debian toolchain, against
# our harness header (/opt/arena/arena.hpp), as the agent user (10001).
#
#   compile_cpp.sh TIMEOUT_S OUTPUT          (started as root; compiles as uid 10001)
#
# Every .cpp/.cc file of the submission is compiled into one program (g++, C++17, -O2). On failure the
# diagnostics are printed between "COMPILE ERROR" marker lines, which the builder shows to the author.
#
# Nothing of the build host may reach the author: Docker bind-mounts into every build step a copy of the
# host's /etc/resolv.conf (the host's resolvers, even without network) and its own /etc/hosts and
# /etc/hostname, which a source could `#include` (its content then quoted by g++) or embed with
# `asm(".incbin ...")`. Started as root, this script first empties those copies (they belong to this
# build step's container, never to the host), then drops to uid 10001 to compile; and the diagnostics
# shown keep only those located in the submission's files, our header and the system headers.
set -u
timeout_s=$1
output=$2
if [ "$(id -u)" = 0 ]; then
    : >/etc/resolv.conf
    printf '127.0.0.1\tlocalhost\n' >/etc/hosts
    echo agent-build >/etc/hostname
    exec setpriv --reuid=10001 --regid=10001 --clear-groups -- sh "$0" "$@"
fi
cd /agent || exit 1
log=/tmp/compile.log

# Diagnostics located in a file outside the submission (an absolute path not under /usr/ or /opt/arena/)
# are replaced by one line naming the file, their quoted source lines dropped.
redact() {
    sed 's#^\./##' "$log" | grep -v '^In file included from\|^ *from ' | awk '
        /^[^ ][^:]*:[0-9]+(:[0-9]+)?: / || /^[^ ][^:]*: In / {
            path = $0
            sub(/:.*$/, "", path)
            hidden = (path ~ /^\// && path !~ /^\/(usr|opt\/arena)\//)
            if (hidden) {
                if (!(path in told)) print "(a diagnostic in " path ", which is not part of the submission, is not shown)"
                told[path] = 1
                next
            }
            print
            next
        }
        /^ / { if (!hidden) print; next }
        { hidden = 0; print }'
}

timeout -s KILL "$timeout_s" find . -type f \( -name '*.cpp' -o -name '*.cc' \) -exec \
    g++ -std=c++17 -O2 -pipe -fdiagnostics-color=never -fmax-errors=20 -I/opt/arena -o "$output" {} + \
    >"$log" 2>&1
rc=$?
if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
    echo "COMPILE ERROR BEGIN"
    echo "compiling took longer than ${timeout_s} s"
    echo "COMPILE ERROR END"
    exit 1
fi
if [ "$rc" -ne 0 ] || [ ! -x "$output" ]; then
    echo "COMPILE ERROR BEGIN"
    echo "the C++ sources failed to compile (g++ -std=c++17 -O2):"
    redact | head -n 60
    echo "COMPILE ERROR END"
    exit 1
fi
redact
echo "compiled $(find . -type f \( -name '*.cpp' -o -name '*.cc' \) | wc -l) C++ file(s) with $(g++ --version | head -n 1)"
