"""Broken on purpose: building the Player takes 60 s, past any init deadline."""

import time

SLEEP_SECONDS = 60


class Player:
    """Sleeps 60 s in ``__init__`` (TIMEOUT before the first move), then would play legally."""

    def __init__(self, train_mode: bool = False) -> None:
        time.sleep(SLEEP_SECONDS)

    def start(self, state, valid_actions) -> int:
        """First move: legal."""
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward) -> int:
        """Later moves: legal."""
        return int(valid_actions[0])

    def end(self, state, prev_reward) -> None:
        """Match over."""
