"""Hostile: opens files until the open-files limit refuses, then plays on (expected: plays on, capped)."""

import json
import os
import sys


class Player:
    def __init__(self, train_mode=False):
        self.fds = []
        error = None
        try:
            while len(self.fds) < 1_000_000:
                self.fds.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as exc:
            error = exc.strerror
        print(
            "HOSTILE_REPORT " + json.dumps({"opened": len(self.fds), "error": error}),
            file=sys.stderr,
            flush=True,
        )

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
