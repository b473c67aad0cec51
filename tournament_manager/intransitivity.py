"""Where one number per agent cannot tell the story: significant head-to-head cycles and a population view.

Both read the pair table the leaderboard's fit reads (each pair's losses, draws and wins), never the fit:

- :func:`significant_cycles`: triples where A beats B, B beats C and C beats A head to head, each edge
  significant: the 95 % interval of the head-to-head score (win 1, draw 1/2; normal approximation with the
  observed per-match variance) lies above 0.5. No ranking by a single number can order such a triple
  like its head-to-head results.
- :func:`nash_population`: the head-to-head table as a symmetric zero-sum game (payoff of ``i`` against
  ``j``: its score minus 1/2; pairs that never met count 0), its Nash equilibrium (a linear program) and
  each agent's expected payoff against that equilibrium mixture (Nash averaging's rating: 0 for agents in
  the support, below 0 for the others, whatever the number of copies of an agent in the population). For
  games whose strategies cycle (Goofspiel, Leduc Hold'em) this says which agents a strong population
  needs, where the ladder's one number says who does best on average. The linear program gives *a*
  Nash equilibrium; when several exist it is not necessarily the maximum-entropy one of Nash averaging.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tournament_manager.ids import Id

#: Two-sided 95 % standard normal quantile.
Z_95 = 1.959963984540054
#: Games whose strategies cycle: the game page shows the population view beside the ladder.
CYCLIC_GAMES = frozenset({"goofspiel", "leduc-holdem"})


@dataclass(frozen=True)
class Cycle:
    """``a`` beats ``b`` beats ``c`` beats ``a``; the head-to-head scores of the three edges."""

    a: Id
    b: Id
    c: Id
    ab: float
    bc: float
    ca: float


def head_to_head(pairs: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair: the low index's score, its standard error and the number of results."""
    table = np.asarray(table, dtype=np.float64).reshape(-1, 3)
    games = table.sum(axis=1)
    safe = np.maximum(games, 1.0)
    score = (table[:, 1] * 0.5 + table[:, 2]) / safe
    second = (table[:, 1] * 0.25 + table[:, 2]) / safe
    var = np.maximum(second - score**2, 0.0)
    return score, np.sqrt(var / safe), games


def significant_cycles(
    ids: Sequence[Id], pairs: np.ndarray, table: np.ndarray, limit: int = 20, min_games: int = 4
) -> list[Cycle]:
    """Up to ``limit`` triples ``a > b > c > a`` whose three head-to-head results are each significant
    (see the module docstring), strongest weakest-edge first; pairs with fewer than ``min_games`` results
    are never significant."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(ids) < 3 or not len(pairs):
        return []
    score, se, games = head_to_head(pairs, table)
    beats: dict[int, dict[int, float]] = {}
    for (lo, hi), s, e, g in zip(pairs.tolist(), score.tolist(), se.tolist(), games.tolist(), strict=True):
        if g < min_games:
            continue
        if s - Z_95 * e > 0.5:
            beats.setdefault(lo, {})[hi] = s
        elif s + Z_95 * e < 0.5:
            beats.setdefault(hi, {})[lo] = 1.0 - s
    beaten_by: dict[int, set[int]] = {}
    for winner, wins in beats.items():
        for loser in wins:
            beaten_by.setdefault(loser, set()).add(winner)
    found = []
    for a, wins in beats.items():
        for b, ab in wins.items():
            if b < a:
                continue
            # c: beaten by b and beating a (a set intersection: fast however dense the table)
            for c in beats.get(b, {}).keys() & beaten_by.get(a, set()):
                if c > a:  # each cycle once, from its smallest index
                    bc, ca = beats[b][c], beats[c][a]
                    found.append((min(ab, bc, ca), Cycle(ids[a], ids[b], ids[c], ab, bc, ca)))
            if len(found) > 100 * limit:  # enough to choose the strongest from; bounds the work
                break
    found.sort(key=lambda t: (-t[0], str(t[1].a), str(t[1].b), str(t[1].c)))
    return [c for _, c in found[:limit]]


def nash_population(ids: Sequence[Id], pairs: np.ndarray, table: np.ndarray) -> dict[Id, tuple[float, float]]:
    """id -> (mass in a Nash equilibrium of the head-to-head game, expected payoff against it)."""
    n = len(ids)
    if n == 0:
        return {}
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    payoff = np.zeros((n, n))
    if len(pairs):
        score, _, games = head_to_head(pairs, table)
        played = games > 0
        lo, hi = pairs[played, 0], pairs[played, 1]
        payoff[lo, hi] = score[played] - 0.5
        payoff[hi, lo] = 0.5 - score[played]
    # max v  s.t.  payoff^T x >= v,  sum x = 1,  x >= 0   (variables x_1..x_n, v; linprog minimises -v)
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    upper = np.hstack([-payoff.T, np.ones((n, 1))])
    equal = np.hstack([np.ones((1, n)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * n + [(None, None)]
    from scipy.optimize import linprog  # here: the web imports this module and never solves (scipy)

    result = linprog(
        cost, A_ub=upper, b_ub=np.zeros(n), A_eq=equal, b_eq=[1.0], bounds=bounds, method="highs"
    )
    if not result.success:
        return {}
    mass = np.maximum(result.x[:n], 0.0)
    mass /= mass.sum()
    against = payoff @ mass
    return {ids[k]: (float(mass[k]), float(against[k])) for k in range(n)}
