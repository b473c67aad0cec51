#!/usr/bin/env bash
# The host user the local sandbox runs agents as when the worker is root (run_duel/sandbox/local.py,
# AGENT_USER): a system user with no home, no shell, no password and no other group. Without it a root
# worker refuses to start bubblewrap, since bubblewrap run by root maps the agent to host root.
# Idempotent; needs root; does nothing for another user (the worker's own uid is then unprivileged).
set -euo pipefail
NAME="${1:-rl-arena-agent}"
[ "$(id -u)" -eq 0 ] || exit 0
if ! getent passwd "$NAME" >/dev/null; then
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
        --comment "RL Arena local sandbox agents" "$NAME"
fi
uid="$(id -u "$NAME")"
gid="$(id -g "$NAME")"
if [ "$uid" -eq 0 ] || [ "$gid" -eq 0 ]; then
    echo "ensure_agent_user: $NAME has uid $uid / gid $gid: it must be an unprivileged user" >&2
    exit 1
fi
