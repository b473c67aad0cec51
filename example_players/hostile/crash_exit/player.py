"""Hostile: exits the process with os._exit(3) on its first move (expected: CRASH)."""

import os


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        os._exit(3)

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
