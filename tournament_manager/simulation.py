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
