"""Fills its memory up to just below the limit while starting, then allocates without end at its first
move: it reaches the memory limit quickly however slow the machine's page faults are.

``ARENA_MEMORY_LIMIT_MB`` (default 512, the games' limit) sets the limit it aims under;
``ARENA_BOMB_DELAY_S`` (default 0) how long it waits at its first move before allocating (past the move
deadline: the limit is reached just after the deadline, as a slower bomb does on a busy machine).
"""

import os
import time

LIMIT_MB = int(os.environ.get("ARENA_MEMORY_LIMIT_MB", "512"))
DELAY_S = float(os.environ.get("ARENA_BOMB_DELAY_S", "0"))
PAGE = 4096


def _touched(megabytes):
    block = bytearray(megabytes * 1024 * 1024)
    for i in range(0, len(block), PAGE):
        block[i] = 1
    return block


class Player:
    def __init__(self, train_mode=False):
        self.hoard = [_touched(16) for _ in range((LIMIT_MB - 32) // 16)]

    def start(self, state, valid_actions):
        time.sleep(DELAY_S)
        while True:
            self.hoard.append(_touched(4))

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
