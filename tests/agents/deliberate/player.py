"""Test agent: a legal but deliberate player (10 ms a move, far inside every limit), so that a duel of it
lasts long enough to be interrupted on purpose, whatever the machine's speed."""

import time


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward):
        time.sleep(0.01)
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
