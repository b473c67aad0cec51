"""Hostile: raises an exception on its first move (expected: CRASH)."""


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        raise ValueError("deliberate crash")

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
