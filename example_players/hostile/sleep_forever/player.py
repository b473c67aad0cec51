"""Hostile: sleeps forever on its first move (expected: TIMEOUT)."""

import time


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        while True:
            time.sleep(3600)

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
