"""Computes for 60 % of its move limit (CPU seconds of its own thread) at every move.

``ARENA_MOVE_LIMIT_S`` (default 1.0) and ``ARENA_BUSY_FRACTION`` (default 0.6) in its environment set it.
"""

import os
import time

BUSY_S = float(os.environ.get("ARENA_BUSY_FRACTION", "0.6")) * float(
    os.environ.get("ARENA_MOVE_LIMIT_S", "1.0")
)


class Player:
    def __init__(self, train_mode=False):
        self.spent = 0.0

    def _think(self):
        start = time.thread_time()
        while time.thread_time() - start < BUSY_S:
            sum(range(2000))
        self.spent += time.thread_time() - start

    def start(self, state, valid_actions):
        self._think()
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
