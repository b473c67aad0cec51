"""Hostile: closes its own stdin, stdout and stderr, then plays on (expected: plays on unaffected)."""

import os
import sys


class Player:
    def __init__(self, train_mode=False):
        sys.stdout.flush()
        for fd in (0, 1, 2):
            os.close(fd)

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
