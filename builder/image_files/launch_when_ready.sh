#!/bin/sh
# The entrypoint of our C++ agent images: starts the agent's program only once its seat is ready.
#
#   launch_when_ready.sh PROGRAM [ARGS...]        (the sandbox passes --connect SOCKET_PATH in ARGS)
#
# The agent owns main(), which runs before arena::run connects. The referee gives the socket its name
# only once it has filled the agent's data folder (run_duel/sandbox/docker.py), so waiting here until the
# socket exists means no code of the agent runs before then. Without --connect (the protocol on
# stdin/stdout) the program starts at once. It gives up after about 30 s (the referee has by then).
set -u
program=$1
shift
socket=
previous=
for argument in "$@"; do
    [ "$previous" = --connect ] && socket=$argument
    previous=$argument
done
if [ -n "$socket" ]; then
    waited=0
    until [ -S "$socket" ]; do
        waited=$((waited + 1))
        if [ "$waited" -gt 3000 ]; then  # 3000 x 10 ms
            echo "arena launcher: $socket did not appear" >&2
            exit 70
        fi
        sleep 0.01
    done
fi
exec "$program" "$@"
