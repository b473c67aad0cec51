"""Skill ratings for two-player games behind one small interface.

A :class:`Rater` turns the outcome of one match between two competitors into new skills. Two
implementations exist: :class:`TrueSkillRater` (the ``trueskill`` package, the default) and
:class:`OpenSkillRater` (the ``openskill`` package, Weng-Lin models). Both are pure and deterministic:
the same inputs always give the same outputs, so ratings can be recomputed from stored results.

Outcomes are floats from the first competitor's point of view: ``1.0`` a wins, ``0.5`` draw, ``0.0`` b wins.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

WIN = 1.0
DRAW = 0.5
LOSS = 0.0


@dataclass(frozen=True)
class Skill:
    """A Gaussian belief about a competitor's skill: mean ``mu``, standard deviation ``sigma``."""

    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """``mu - 3 sigma``: a skill the competitor exceeds with ~99.9 % confidence (the ladder's key)."""
        return self.mu - 3.0 * self.sigma


def _check_outcome(outcome: float) -> float:
    if outcome not in (WIN, DRAW, LOSS):
        raise ValueError(f"outcome must be 1.0 (a wins), 0.5 (draw) or 0.0 (b wins), got {outcome!r}")
    return float(outcome)


class Rater(ABC):
    """Rating system for 1-vs-1 matches. Implementations are immutable and deterministic."""

    #: Short identifier, e.g. ``"trueskill"``; stored with ratings so they can be recomputed.
    name: str

    @abstractmethod
    def initial(self) -> Skill:
        """The skill of a competitor that has never played."""

    @abstractmethod
    def rate(self, a: Skill, b: Skill, outcome: float) -> tuple[Skill, Skill]:
        """New skills of ``a`` and ``b`` after one match (``outcome`` 1.0 a wins, 0.5 draw, 0.0 b wins)."""

    @abstractmethod
    def match_quality(self, a: Skill, b: Skill) -> float:
        """How informative/balanced a match would be, in (0, 1]; higher is better."""

    def reset_uncertainty(self, skill: Skill) -> Skill:
        """The skill of a new revision of a competitor: the same mean, the initial uncertainty."""
        return Skill(skill.mu, self.initial().sigma)

    def win_probability(self, a: Skill, b: Skill) -> float:
        """Probability that ``a`` beats ``b`` under the model (draws ignored)."""
        beta = self.beta
        denom = math.sqrt(2 * beta * beta + a.sigma**2 + b.sigma**2)
        return 0.5 * (1.0 + math.erf((a.mu - b.mu) / (denom * math.sqrt(2.0))))

    @property
    @abstractmethod
    def beta(self) -> float:
        """Performance noise: the skill gap that gives ~76 % chance of winning."""


class TrueSkillRater(Rater):
    """TrueSkill (Herbrich et al.) via the ``trueskill`` package.

    ``tau`` (the dynamics factor) defaults to 0 because an agent is frozen code: its skill does not drift.
    """

    name = "trueskill"

    def __init__(
        self,
        mu: float = 25.0,
        sigma: float = 25.0 / 3.0,
        beta: float = 25.0 / 6.0,
        tau: float = 0.0,
        draw_probability: float = 0.10,
    ) -> None:
        import trueskill

        if not 0.0 <= draw_probability < 1.0:
            raise ValueError(f"draw_probability must be in [0, 1), got {draw_probability!r}")
        self._ts = trueskill
        self._env = trueskill.TrueSkill(
            mu=mu, sigma=sigma, beta=beta, tau=tau, draw_probability=draw_probability, backend=None
        )
        self._draw_margin = trueskill.calc_draw_margin(draw_probability, 2, self._env)
        self.params = {
            "mu": mu,
            "sigma": sigma,
            "beta": beta,
            "tau": tau,
            "draw_probability": draw_probability,
        }

    @property
    def beta(self) -> float:
        """Performance noise (TrueSkill's ``beta``)."""
        return self._env.beta

    def initial(self) -> Skill:
        """``Skill(mu0, sigma0)``, by default ``(25, 25/3)``."""
        return Skill(self._env.mu, self._env.sigma)

    def rate(self, a: Skill, b: Skill, outcome: float) -> tuple[Skill, Skill]:
        """Apply one TrueSkill update, in closed form.

        For two players the factor graph's message passing reduces to Herbrich et al.'s update: with
        ``c^2 = 2 beta^2 + sigma_w^2 + sigma_l^2`` (each sigma^2 plus tau^2), ``t = (mu_w - mu_l) / c`` and
        the draw margin ``eps / c``, ``mu_w += sigma_w^2 / c v`` and ``sigma_w^2 *= 1 - sigma_w^2 / c^2 w``
        (the loser's mu moves the other way). ``v`` and ``w`` are the library's own functions (its
        Gaussian approximations, its FloatingPointError for hopeless mismatches), so the numbers equal
        ``trueskill.rate_1vs1``'s to ~1e-12, computed ~20x faster: rating is the rating worker's main cost.
        """
        outcome = _check_outcome(outcome)
        env = self._env
        win, lose = (b, a) if outcome == LOSS else (a, b)
        tau2 = env.tau**2
        var_w, var_l = win.sigma**2 + tau2, lose.sigma**2 + tau2
        c2 = 2 * env.beta**2 + var_w + var_l
        c = math.sqrt(c2)
        t, eps = (win.mu - lose.mu) / c, self._draw_margin / c
        if outcome == DRAW:
            v, k = env.v_draw(t, eps), env.w_draw(t, eps)
        else:
            v, k = env.v_win(t, eps), env.w_win(t, eps)
        new_w = Skill(win.mu + var_w / c * v, math.sqrt(var_w * (1 - var_w / c2 * k)))
        new_l = Skill(lose.mu - var_l / c * v, math.sqrt(var_l * (1 - var_l / c2 * k)))
        return (new_l, new_w) if outcome == LOSS else (new_w, new_l)

    def rate_with_library(self, a: Skill, b: Skill, outcome: float) -> tuple[Skill, Skill]:
        """The same update through the library's factor graph (``trueskill.rate_1vs1``): the reference
        :meth:`rate` is tested against."""
        outcome = _check_outcome(outcome)
        ra = self._env.create_rating(a.mu, a.sigma)
        rb = self._env.create_rating(b.mu, b.sigma)
        if outcome == LOSS:
            nb, na = self._ts.rate_1vs1(rb, ra, env=self._env)
        else:
            na, nb = self._ts.rate_1vs1(ra, rb, drawn=outcome == DRAW, env=self._env)
        return Skill(na.mu, na.sigma), Skill(nb.mu, nb.sigma)

    def match_quality(self, a: Skill, b: Skill) -> float:
        """TrueSkill's 1-vs-1 match quality (the library's ``quality_1vs1``, in closed form: ~50x faster)."""
        return gaussian_match_quality(a, b, self._env.beta)


class OpenSkillRater(Rater):
    """Weng-Lin Bayesian ratings via the ``openskill`` package (Plackett-Luce model by default).

    ``tau`` defaults to 0 for the same reason as in :class:`TrueSkillRater`.
    """

    name = "openskill"

    _MODELS = ("PlackettLuce", "BradleyTerryFull", "BradleyTerryPart", "ThurstoneMostellerFull")

    def __init__(
        self,
        model: str = "PlackettLuce",
        mu: float = 25.0,
        sigma: float = 25.0 / 3.0,
        beta: float = 25.0 / 6.0,
        tau: float = 0.0,
    ) -> None:
        from openskill import models

        if model not in self._MODELS:
            raise ValueError(f"unknown openskill model {model!r}; choose one of {', '.join(self._MODELS)}")
        self._model = getattr(models, model)(mu=mu, sigma=sigma, beta=beta, tau=tau)
        self._mu0, self._sigma0, self._beta = mu, sigma, beta
        self.params = {"model": model, "mu": mu, "sigma": sigma, "beta": beta, "tau": tau}

    @property
    def beta(self) -> float:
        """Performance noise (the model's ``beta``)."""
        return self._beta

    def initial(self) -> Skill:
        """``Skill(mu0, sigma0)``, by default ``(25, 25/3)``."""
        return Skill(self._mu0, self._sigma0)

    def rate(self, a: Skill, b: Skill, outcome: float) -> tuple[Skill, Skill]:
        """Apply one Weng-Lin update (ranks: 0 for the winner, equal ranks for a draw)."""
        outcome = _check_outcome(outcome)
        ranks = {WIN: [0, 1], DRAW: [0, 0], LOSS: [1, 0]}[outcome]
        ra = self._model.rating(mu=a.mu, sigma=a.sigma)
        rb = self._model.rating(mu=b.mu, sigma=b.sigma)
        [[na], [nb]] = self._model.rate([[ra], [rb]], ranks=ranks)
        return Skill(na.mu, na.sigma), Skill(nb.mu, nb.sigma)

    def match_quality(self, a: Skill, b: Skill) -> float:
        """The TrueSkill 1-vs-1 quality formula evaluated with this model's ``beta``."""
        return gaussian_match_quality(a, b, self._beta)


def gaussian_match_quality(a: Skill, b: Skill, beta: float) -> float:
    """``sqrt(2b^2 / c^2) * exp(-(mu_a - mu_b)^2 / (2 c^2))`` with ``c^2 = 2b^2 + sigma_a^2 + sigma_b^2``."""
    c2 = 2 * beta * beta + a.sigma**2 + b.sigma**2
    return math.sqrt(2 * beta * beta / c2) * math.exp(-((a.mu - b.mu) ** 2) / (2 * c2))


_RATERS: dict[str, type[Rater]] = {"trueskill": TrueSkillRater, "openskill": OpenSkillRater}


def get_rater(name: str = "trueskill", **params: Any) -> Rater:
    """Build the rater called ``name`` (``"trueskill"`` or ``"openskill"``) with keyword ``params``."""
    try:
        cls = _RATERS[name]
    except KeyError:
        raise ValueError(f"unknown rater {name!r}; choose one of {', '.join(sorted(_RATERS))}") from None
    return cls(**params)
