#!/bin/sh
# Compile a C++ agent inside the build container: run as the agent user (10001), with no network, with
# the Debian toolchain, against our harness header (/opt/arena/arena.hpp).
#
#   compile_cpp.sh TIMEOUT_S OUTPUT
#
# Every .cpp/.cc file of the submission is compiled into one program (g++, C++17, -O2). On failure the
# diagnostics are printed between "COMPILE ERROR" marker lines, which the builder shows to the author.
set -u
timeout_s=$1
output=$2
cd /agent || exit 1
log=/tmp/compile.log
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
    sed 's#^\./##' "$log" | grep -v '^In file included from\|^ *from ' | head -n 60
    echo "COMPILE ERROR END"
    exit 1
fi
sed 's#^\./##' "$log"
echo "compiled $(find . -type f \( -name '*.cpp' -o -name '*.cc' \) | wc -l) C++ file(s) with $(g++ --version | head -n 1)"
