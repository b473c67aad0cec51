"""Hostile: tries to write outside /tmp, then plays on (expected: every write fails)."""

import json
import os
import sys

TARGETS = [
    "/agent/pwned",
    "/agent/player.py",
    "/etc/pwned",
    "/pwned",
    "/usr/lib/pwned",
    "/run/arena/pwned",
    "/var/tmp/pwned",
    "/dev/shm/../pwned",
    "/opt/arena/arena_harness.py",
]


class Player:
    def __init__(self, train_mode=False):
        results = {}
        for path in TARGETS:
            try:
                with open(path, "a") as handle:
                    handle.write("pwned\n")
                results[path] = "WRITTEN"
            except OSError as exc:
                results[path] = exc.strerror
        try:
            os.mkdir("/agent/newdir")
            results["mkdir /agent/newdir"] = "WRITTEN"
        except OSError as exc:
            results["mkdir /agent/newdir"] = exc.strerror
        print("HOSTILE_REPORT " + json.dumps(results), file=sys.stderr)

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
