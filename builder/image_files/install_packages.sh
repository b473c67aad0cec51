#!/bin/sh
# Install a Python agent's wheels inside the build container: run as the agent user (10001), with no
# network (the build has none), from the wheel files the builder fetched and checked on the host.
#
#   install_packages.sh TIMEOUT_S MAX_BYTES MAX_FILES
#
# The packages land in /opt/agent-packages (made read-only here; copied root-owned into the final image).
# They are unpacked by our own install_wheels.py, not pip: it counts every byte and file before writing it,
# so the caps hold while unpacking (nothing else writes in this step, and no package code runs). The
# kernel's file-size limit (ulimit -f) backs it up for any single file.
# Every failure prints one "PACKAGES ERROR: ..." line, which the builder shows to the submission's author.
set -u
timeout_s=$1
max_bytes=$2
max_files=$3
target=/opt/agent-packages

ulimit -f $((max_bytes / 512 + 1))
timeout -s KILL "$timeout_s" python3 -I -B /tmp/install_wheels.py "$target" "$max_bytes" "$max_files" \
    /tmp/wheels/*.whl
rc=$?
if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then  # killed: by the timeout, or by the build's memory cap
    echo "PACKAGES ERROR: installing the packages was stopped: it took longer than ${timeout_s} s or more memory than the build has"
    exit 1
fi
if [ "$rc" -eq 153 ]; then
    echo "PACKAGES ERROR: a file of the packages is larger than this server's limit of $((max_bytes / 1048576)) MiB"
    exit 1
fi
if [ "$rc" -eq 1 ]; then
    exit 1  # install_wheels.py printed why
fi
if [ "$rc" -ne 0 ]; then
    echo "PACKAGES ERROR: unpacking the fetched wheels failed (exit $rc; the log above says why)"
    exit 1
fi
# Counted again from the file system (the unpacker's count is the cap; this is what the author sees).
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
