"""Hostile: starts threads until it cannot (while starting), then plays on.

Expected: contained by the pids limit (threads count as tasks).
"""

import json
import sys
import threading
import time


class Player:
    def __init__(self, train_mode=False):
        count = 0
        while True:
            try:
                threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
            except RuntimeError as exc:
                report = {"threads": count, "error": str(exc)}
                print("HOSTILE_REPORT " + json.dumps(report), file=sys.stderr)
                break
            count += 1

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
