"""A simulated league of agents with hidden levels, for benchmarks and tests of ratings and matchmaking.

It plays the test game of the TrueSkill/Dask evaluation article (the same outcome model as the
``hidden-skill`` environment, :func:`environments.hidden_skill.rules.match_outcome`), including its
infrastructure failures: a match is lost to an error with probability ``error_prob`` (0.1 by default)
and nothing is learnt from it. Accuracy helpers compare estimated skills to the hidden levels.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from environments.hidden_skill.rules import LEVELS, MAX_RAND_PROB, MAX_TIE_PROB, match_outcome


class SimulatedLeague:
    """``n_agents`` agents (ids ``0..n-1``) with distinct hidden levels drawn from ``0..level_range-1``."""

    def __init__(
        self,
        n_agents: int,
        seed: int,
        *,
        error_prob: float = 0.1,
        level_range: int = LEVELS,
        max_rand_prob: float = MAX_RAND_PROB,
        max_tie_prob: float = MAX_TIE_PROB,
    ) -> None:
        if not 2 <= n_agents <= level_range:
            raise ValueError(f"n_agents must be in 2..{level_range} (levels are distinct), got {n_agents}")
        if not 0.0 <= error_prob < 1.0:
            raise ValueError(f"error_prob must be in [0, 1), got {error_prob}")
        self._rng = random.Random(seed)
        self.levels: list[int] = self._rng.sample(range(level_range), n_agents)
        self.error_prob = error_prob
        self._model = {
            "level_range": level_range,
            "max_rand_prob": max_rand_prob,
            "max_tie_prob": max_tie_prob,
        }
        self.played = 0
        self.errors = 0

    @property
    def n_agents(self) -> int:
        """Number of agents."""
        return len(self.levels)

    def play(self, a: int, b: int) -> float | None:
        """Play one match: 1.0 ``a`` wins, 0.5 draw, 0.0 ``b`` wins, or ``None`` when it failed."""
        if a == b:
            raise ValueError(f"an agent cannot play itself (agent {a})")
        self.played += 1
        if self._rng.random() < self.error_prob:
            self.errors += 1
            return None
        return match_outcome(self.levels[a], self.levels[b], self._rng, **self._model)

    def pairs_correct(self, scores: Mapping[int, float] | Sequence[float]) -> float:
        """Share of agent pairs whose ``scores`` are ordered like their hidden levels (ties count half)."""
        n = self.n_agents
        good = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                truth = self.levels[i] - self.levels[j]
                est = scores[i] - scores[j]
                if est == 0:
                    good += 0.5
                elif (truth > 0) == (est > 0):
                    good += 1.0
        return good / (n * (n - 1) / 2)

    def kendall_tau(self, scores: Mapping[int, float] | Sequence[float]) -> float:
        """Kendall's tau-b between ``scores`` and the hidden levels."""
        from scipy.stats import kendalltau

        n = self.n_agents
        return float(kendalltau([scores[i] for i in range(n)], self.levels).statistic)


class FixtureLeague:
    """A league whose match outcomes are sampled from measured per-pair counts (a real game's fixture).

    ``pairs``: rows ``(first, second, first_wins, draws, first_losses)`` by agent name, for both orders
    of every pair (who moves first matters). :meth:`play` samples one match from the row of its ordered
    pair, so first-move advantage, draws and intransitive cycles are kept. The true order is each
    agent's ``score`` (mean points against the whole field in the round robin that made the fixture).
    """

    def __init__(self, names: Sequence[str], scores: Sequence[float], pairs: Sequence[Sequence], seed: int):
        if len(names) != len(scores) or len(set(names)) != len(names):
            raise ValueError("names must be unique, one score each")
        self.names = list(names)
        self.scores = list(scores)
        index = {n: i for i, n in enumerate(self.names)}
        self._rates: dict[tuple[int, int], tuple[float, float]] = {}
        for first, second, wins, draws, losses in pairs:
            total = wins + draws + losses
            if total <= 0:
                raise ValueError(f"no matches for {first} vs {second}")
            self._rates[(index[first], index[second])] = (wins / total, (wins + draws) / total)
        missing = [
            (a, b)
            for a in range(len(names))
            for b in range(len(names))
            if a != b and (a, b) not in self._rates
        ]
        if missing:
            raise ValueError(f"fixture lacks ordered pairs, e.g. {missing[:3]}")
        self._rng = random.Random(seed)
        self.played = 0

    @classmethod
    def from_file(cls, path: str, seed: int) -> FixtureLeague:
        """Load a fixture written by ``benchmarks/fixtures/make_connect_four_league.py``."""
        import json

        with open(path) as f:
            data = json.load(f)
        agents = data["agents"]
        return cls([a["name"] for a in agents], [a["score"] for a in agents], data["pairs"], seed)

    @property
    def n_agents(self) -> int:
        """Number of agents."""
        return len(self.names)

    def play(self, first: int, second: int) -> float:
        """One match, ``first`` moving first: 1.0 it wins, 0.5 draw, 0.0 ``second`` wins."""
        win, win_or_draw = self._rates[(first, second)]
        self.played += 1
        u = self._rng.random()
        return 1.0 if u < win else 0.5 if u < win_or_draw else 0.0

    def pairs_correct(self, scores: Mapping[int, float] | Sequence[float]) -> float:
        """Share of agent pairs whose ``scores`` are ordered like the true scores (ties count half)."""
        n = self.n_agents
        good = 0.0
        for i in range(n):
            for j in range(i + 1, n):
                est = scores[i] - scores[j]
                if est == 0:
                    good += 0.5
                elif (self.scores[i] > self.scores[j]) == (est > 0):
                    good += 1.0
        return good / (n * (n - 1) / 2)
