"""Hostile: a fork bomb while starting; the parent then plays on (expected: contained by the pids limit).

Every process forks until fork fails, then sleeps. Reports how many forks succeeded in the parent.
"""

import json
import os
import sys
import time


class Player:
    def __init__(self, train_mode=False):
        self._bomb()  # during start-up, whose time limit is generous, so the parent can still play

    def _bomb(self):
        forks = 0
        parent = os.getpid()
        while True:
            try:
                pid = os.fork()
            except OSError as exc:
                if os.getpid() != parent:
                    while True:
                        time.sleep(3600)
                print(
                    "HOSTILE_REPORT " + json.dumps({"forks": forks, "error": exc.strerror}), file=sys.stderr
                )
                return
            if pid == 0:
                forks = 0  # a child: keep forking too
                continue
            forks += 1

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
