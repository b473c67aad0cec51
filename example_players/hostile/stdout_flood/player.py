"""Hostile: prints 1 MB to stdout on every move, and plays correctly (expected: plays on, log capped)."""

LINE = "flood " * 1000


class Player:
    def __init__(self, train_mode=False):
        pass

    def _flood(self):
        for _ in range(170):
            print(LINE)

    def start(self, state, valid_actions):
        self._flood()
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        self._flood()
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
