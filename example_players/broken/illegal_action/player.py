"""Broken on purpose: answers with an integer action that is not in ``valid_actions``."""


class Player:
    """Always plays ``max(valid_actions) + 1000`` (INVALID_ACTION)."""

    def __init__(self, train_mode: bool = False) -> None:
        pass

    def start(self, state, valid_actions) -> int:
        """An illegal first move."""
        return int(max(valid_actions)) + 1000

    def step(self, state, valid_actions, prev_reward) -> int:
        """An illegal move."""
        return int(max(valid_actions)) + 1000

    def end(self, state, prev_reward) -> None:
        """Match over."""
