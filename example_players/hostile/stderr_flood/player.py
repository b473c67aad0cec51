"""Hostile: writes 1 MB to stderr on every move (no newlines), and plays correctly (expected: plays on)."""

import os

BLOB = b"e" * (1024 * 1024)


class Player:
    def __init__(self, train_mode=False):
        pass

    def _flood(self):
        view = memoryview(BLOB)
        while view:
            view = view[os.write(2, view) :]

    def start(self, state, valid_actions):
        self._flood()
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        self._flood()
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
