"""Broken on purpose: the process exits with status 3 in the middle of a match (no exception, no reply)."""

import os

EXIT_STATUS = 3


class Player:
    """Legal first move, then ``os._exit(3)`` in ``step`` (CRASH)."""

    def __init__(self, train_mode: bool = False) -> None:
        pass

    def start(self, state, valid_actions) -> int:
        """First move: legal."""
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward) -> int:
        """Second move: kill the process without any cleanup."""
        os._exit(EXIT_STATUS)

    def end(self, state, prev_reward) -> None:
        """Match over."""
