"""In-process match helper for the example-player tests (not the referee: no sandbox, no limits).

It drives ``Player`` objects with the real rules from ``environments`` exactly as the harness would:
``start`` on a seat's first move of a match, ``step`` afterwards, ``end`` for both seats at the end,
with numpy observations and a 1-D int64 ``valid_actions``.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np

from environments import get_game

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "example_players"
_counter = itertools.count()


def load_player_module(folder: Path) -> ModuleType:
    """Import ``folder/player.py`` under a fresh, unique module name."""
    name = f"example_player_under_test_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, folder / "player.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class MatchRecord:
    """Outcome of one in-process match."""

    winner: int | None  # seat 0 or 1, or None for a draw
    actions: list[int] = field(default_factory=list)
    seats: list[object] = field(default_factory=list)  # the player in seat 0 and seat 1


def play_match(slug: str, first, second, max_plies: int = 1000) -> MatchRecord:
    """Play one match of ``slug``; ``first`` sits in seat 0 (moves first). Raises on an illegal action."""
    game = get_game(slug)
    state = game.initial_state()
    seats = [first, second]
    started = [False, False]
    record = MatchRecord(winner=None, seats=seats)
    for _ in range(max_plies):
        if game.is_over(state):
            break
        seat = game.to_move(state)
        obs = game.observation(state, seat)
        legal = game.legal_actions(state)
        valid = np.asarray(legal, dtype=np.int64)
        if started[seat]:
            action = seats[seat].step(obs, valid, 0.0)
        else:
            started[seat] = True
            action = seats[seat].start(obs, valid)
        if action not in legal:
            raise AssertionError(f"{type(seats[seat]).__module__} played {action!r}, legal: {legal}")
        record.actions.append(int(action))
        state = game.apply(state, int(action))
    else:
        raise AssertionError(f"{slug} match did not end within {max_plies} plies")
    rewards = game.rewards(state)
    for seat in (0, 1):
        seats[seat].end(game.observation(state, seat), rewards[seat])
    record.winner = game.winner(state)
    return record


@dataclass
class Tally:
    """Results of a series from one player's point of view."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def played(self) -> int:
        """Matches played."""
        return self.wins + self.draws + self.losses


def play_series(slug: str, hero, villain, matches: int) -> Tally:
    """Play ``matches`` matches, alternating who starts; count results for ``hero``."""
    tally = Tally()
    for i in range(matches):
        hero_seat = i % 2
        pair = (hero, villain) if hero_seat == 0 else (villain, hero)
        winner = play_match(slug, *pair).winner
        if winner is None:
            tally.draws += 1
        elif winner == hero_seat:
            tally.wins += 1
        else:
            tally.losses += 1
    return tally


def position(slug: str, actions: list[int]) -> tuple[np.ndarray, np.ndarray, dict]:
    """Play ``actions`` from the start with the real rules; return (observation, valid_actions, state)."""
    game = get_game(slug)
    state = game.initial_state()
    for action in actions:
        state = game.apply(state, action)
    seat = game.to_move(state)
    return (
        game.observation(state, seat),
        np.asarray(game.legal_actions(state), dtype=np.int64),
        state,
    )


def hands_opponent_a_win(state: dict, action: int) -> bool:
    """Quarto: whether, after ``action``, the opponent can win with its very next move (real rules)."""
    game = get_game("quarto")
    after = game.apply(state, action)
    if game.is_over(after):
        return False
    opponent = game.to_move(after)
    tried_cells = set()
    for reply in game.legal_actions(after):
        cell = reply // 17
        if cell not in tried_cells:  # only the placement decides a win
            tried_cells.add(cell)
            if game.winner(game.apply(after, reply)) == opponent:
                return True
    return False
