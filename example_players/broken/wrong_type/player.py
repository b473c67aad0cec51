"""Broken on purpose: answers with a string instead of an integer action."""


class Player:
    """Always plays ``"left"`` (INVALID_ACTION or BAD_OUTPUT, never a crash of the referee)."""

    def __init__(self, train_mode: bool = False) -> None:
        pass

    def start(self, state, valid_actions) -> str:
        """A move of the wrong type."""
        return "left"

    def step(self, state, valid_actions, prev_reward) -> str:
        """A move of the wrong type."""
        return "left"

    def end(self, state, prev_reward) -> None:
        """Match over."""
