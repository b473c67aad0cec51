"""Hostile: fills /tmp until the disk is full, then plays on (expected: contained by the tmpfs size)."""

import json
import os
import sys


class Player:
    def __init__(self, train_mode=False):
        written = 0
        error = None
        chunk = b"x" * (1024 * 1024)
        try:
            for n in range(100_000):
                with open(f"/tmp/fill-{n}", "wb") as handle:
                    handle.write(chunk)
                written += len(chunk)
        except OSError as exc:
            error = exc.strerror
        print("HOSTILE_REPORT " + json.dumps({"written": written, "error": error}), file=sys.stderr)
        for name in os.listdir("/tmp"):
            if name.startswith("fill-"):
                os.unlink(os.path.join("/tmp", name))

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
