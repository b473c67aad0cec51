"""Hostile: dereferences a NULL pointer through ctypes on its first move (expected: CRASH, SIGSEGV)."""

import ctypes


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        ctypes.string_at(0)

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
