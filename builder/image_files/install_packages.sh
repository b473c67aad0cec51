#!/bin/sh
# Install a Python agent's wheels inside the build container: run as the agent user (10001), with no
# network (the build has none) and --no-index, from the wheel files the builder fetched on the host.
#
#   install_packages.sh TIMEOUT_S MAX_BYTES MAX_FILES
#
# The packages land in /opt/agent-packages (made read-only here; copied root-owned into the final image).
# Every failure prints one "PACKAGES ERROR: ..." line, which the builder shows to the submission's author.
set -u
timeout_s=$1
max_bytes=$2
max_files=$3
target=/opt/agent-packages

timeout -s KILL "$timeout_s" python3 -m pip install --isolated --no-index --no-deps --no-cache-dir \
    --disable-pip-version-check --no-input --progress-bar off --target "$target" /tmp/wheels/*.whl
rc=$?
if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
    echo "PACKAGES ERROR: installing the packages took longer than ${timeout_s} s"
    exit 1
fi
if [ "$rc" -ne 0 ]; then
    echo "PACKAGES ERROR: pip could not install the fetched wheels (exit $rc; the log above says why)"
    exit 1
fi
bytes=$(du -sb "$target" | cut -f1)
files=$(find "$target" | wc -l)
if [ "$bytes" -gt "$max_bytes" ]; then
    echo "PACKAGES ERROR: the installed packages take $((bytes / 1048576)) MiB, over this server's limit of $((max_bytes / 1048576)) MiB"
    exit 1
fi
if [ "$files" -gt "$max_files" ]; then
    echo "PACKAGES ERROR: the installed packages have $files files, over this server's limit of $max_files"
    exit 1
fi
chmod -R a-w,a+rX "$target"
echo "installed packages: $((bytes / 1048576)) MiB in $files files"
