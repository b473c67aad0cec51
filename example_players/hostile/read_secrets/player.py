"""Hostile: dumps the environment it can see (its own and PID 1's), and plays on.

Expected: only the variables the platform chose to pass; nothing of the runner's environment.
"""

import json
import os
import sys


class Player:
    def __init__(self, train_mode=False):
        report = {"environ": dict(os.environ)}
        for pid in ("1", "self"):
            try:
                with open(f"/proc/{pid}/environ", "rb") as handle:
                    report[f"proc_{pid}_environ"] = handle.read().decode(errors="replace").split("\0")
            except OSError as exc:
                report[f"proc_{pid}_environ"] = exc.strerror
        print("HOSTILE_REPORT " + json.dumps(report), file=sys.stderr, flush=True)

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
