"""Broken on purpose: sleeps 30 s in ``step`` on its 2nd move, far past any move deadline."""

import time

SLEEP_SECONDS = 30


class Player:
    """Legal first move, then a 30 s sleep on the 2nd move of each match (TIMEOUT)."""

    def __init__(self, train_mode: bool = False) -> None:
        self.moves = 0

    def start(self, state, valid_actions) -> int:
        """First move: legal and instant."""
        self.moves = 1
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward) -> int:
        """Second move: sleep past the deadline, then answer legally (too late)."""
        self.moves += 1
        if self.moves == 2:
            time.sleep(SLEEP_SECONDS)
        return int(valid_actions[0])

    def end(self, state, prev_reward) -> None:
        """Match over."""
