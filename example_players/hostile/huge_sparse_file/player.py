"""Hostile: tries to make a 10 GB sparse file in /tmp, then plays on.

Expected: refused by the file-size limit (EFBIG).
"""

import json
import os
import sys


class Player:
    def __init__(self, train_mode=False):
        report = {}
        path = "/tmp/sparse"
        try:
            with open(path, "wb") as handle:
                handle.seek(10 * 1024**3)
                handle.write(b"x")
            report["seek_write"] = f"OK size {os.path.getsize(path)}"
        except OSError as exc:
            report["seek_write"] = exc.strerror
        try:
            with open(path, "wb") as handle:
                handle.truncate(10 * 1024**3)
            report["truncate"] = f"OK size {os.path.getsize(path)}"
        except OSError as exc:
            report["truncate"] = exc.strerror
        if os.path.exists(path):
            os.unlink(path)
        print("HOSTILE_REPORT " + json.dumps(report), file=sys.stderr)

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
