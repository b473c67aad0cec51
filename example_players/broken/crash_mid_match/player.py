"""Broken on purpose: plays a few legal moves, then raises inside ``step``."""

CRASH_ON_MOVE = 3  # the 3rd move of a match (start is move 1)


class Player:
    """Legal first moves, then ``RuntimeError`` on move ``CRASH_ON_MOVE`` of each match."""

    def __init__(self, train_mode: bool = False) -> None:
        self.moves = 0

    def start(self, state, valid_actions) -> int:
        """First move: legal."""
        self.moves = 1
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward) -> int:
        """Later moves: legal until the crash."""
        self.moves += 1
        if self.moves >= CRASH_ON_MOVE:
            raise RuntimeError(f"crash_mid_match: failing on purpose on move {self.moves}")
        return int(valid_actions[0])

    def end(self, state, prev_reward) -> None:
        """Match over."""
