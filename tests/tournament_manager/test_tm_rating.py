"""Raters: TrueSkill checked against the published formulas, OpenSkill sanity, the shared interface."""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from tournament_manager.rating import OpenSkillRater, Skill, TrueSkillRater, get_rater

N = NormalDist()
BETA = 25 / 6
DRAW_PROBABILITY = 0.10


def draw_margin() -> float:
    """TrueSkill's draw margin for two players: sqrt(2) * beta * Phi^-1((p_draw + 1) / 2)."""
    return math.sqrt(2) * BETA * N.inv_cdf((DRAW_PROBABILITY + 1) / 2)


def expected_win(winner: Skill, loser: Skill) -> tuple[Skill, Skill]:
    """TrueSkill 1-vs-1 update when ``winner`` beats ``loser`` (tau = 0), from Herbrich et al. 2007."""
    c = math.sqrt(2 * BETA**2 + winner.sigma**2 + loser.sigma**2)
    t, eps = (winner.mu - loser.mu) / c, draw_margin() / c
    v = N.pdf(t - eps) / N.cdf(t - eps)
    w = v * (v + t - eps)
    new_w = Skill(
        winner.mu + winner.sigma**2 / c * v, winner.sigma * math.sqrt(1 - winner.sigma**2 / c**2 * w)
    )
    new_l = Skill(loser.mu - loser.sigma**2 / c * v, loser.sigma * math.sqrt(1 - loser.sigma**2 / c**2 * w))
    return new_w, new_l


def expected_draw(a: Skill, b: Skill) -> tuple[Skill, Skill]:
    """TrueSkill 1-vs-1 update for a draw (tau = 0)."""
    c = math.sqrt(2 * BETA**2 + a.sigma**2 + b.sigma**2)
    t, eps = (a.mu - b.mu) / c, draw_margin() / c
    z = N.cdf(eps - t) - N.cdf(-eps - t)
    v = (N.pdf(-eps - t) - N.pdf(eps - t)) / z
    w = v**2 + ((eps - t) * N.pdf(eps - t) + (eps + t) * N.pdf(eps + t)) / z
    new_a = Skill(a.mu + a.sigma**2 / c * v, a.sigma * math.sqrt(1 - a.sigma**2 / c**2 * w))
    new_b = Skill(b.mu - b.sigma**2 / c * v, b.sigma * math.sqrt(1 - b.sigma**2 / c**2 * w))
    return new_a, new_b


def assert_skills_close(got: tuple[Skill, Skill], want: tuple[Skill, Skill]) -> None:
    # The library's pure-Python erfc/ppf approximations are accurate to ~1e-7 relative: allow 1e-5.
    for g, w in zip(got, want, strict=True):
        assert g.mu == pytest.approx(w.mu, abs=1e-5)
        assert g.sigma == pytest.approx(w.sigma, abs=1e-5)


def test_trueskill_win_matches_the_published_formulas():
    rater = TrueSkillRater(tau=0.0, draw_probability=DRAW_PROBABILITY)
    a, b = Skill(27.0, 5.0), Skill(24.0, 7.0)
    assert_skills_close(rater.rate(a, b, 1.0), expected_win(a, b))


def test_trueskill_win_from_the_initial_skill_gives_the_textbook_numbers():
    rater = TrueSkillRater()
    winner, loser = rater.rate(rater.initial(), rater.initial(), 1.0)
    assert (round(winner.mu, 3), round(winner.sigma, 3)) == (29.396, 7.171)
    assert (round(loser.mu, 3), round(loser.sigma, 3)) == (20.604, 7.171)


def test_trueskill_draw_matches_the_published_formulas():
    rater = TrueSkillRater(tau=0.0, draw_probability=DRAW_PROBABILITY)
    a, b = Skill(30.0, 4.0), Skill(22.0, 6.5)
    assert_skills_close(rater.rate(a, b, 0.5), expected_draw(a, b))


def test_a_loss_is_the_mirror_of_a_win():
    rater = TrueSkillRater()
    a, b = Skill(26.0, 6.0), Skill(23.0, 3.0)
    lost_a, won_b = rater.rate(a, b, 0.0)
    won_b2, lost_a2 = rater.rate(b, a, 1.0)
    assert (lost_a, won_b) == (lost_a2, won_b2)


def test_tau_defaults_to_zero_so_a_draw_between_equals_only_shrinks_sigma():
    rater = TrueSkillRater()
    assert rater.params["tau"] == 0.0
    a, b = rater.rate(rater.initial(), rater.initial(), 0.5)
    assert a.mu == pytest.approx(25.0) and b.mu == pytest.approx(25.0)
    assert a.sigma < rater.initial().sigma


@pytest.mark.parametrize(("tau", "draw_probability"), [(0.0, 0.10), (0.1, 0.10), (0.25, 0.30), (0.0, 0.02)])
def test_the_closed_form_update_equals_the_library_factor_graph(tau, draw_probability):
    import random

    rater = TrueSkillRater(tau=tau, draw_probability=draw_probability)
    rng = random.Random(7)
    compared = 0
    for _ in range(2000):
        a = Skill(rng.uniform(-10, 60), rng.uniform(0.3, 9))
        b = Skill(rng.uniform(-10, 60), rng.uniform(0.3, 9))
        outcome = rng.choice((1.0, 0.5, 0.0))
        try:
            want = rater.rate_with_library(a, b, outcome)
        except FloatingPointError:  # a hopeless mismatch: the closed form refuses it the same way
            with pytest.raises(FloatingPointError):
                rater.rate(a, b, outcome)
            continue
        got = rater.rate(a, b, outcome)
        for g, w in zip(got, want, strict=True):
            assert g.mu == pytest.approx(w.mu, rel=1e-9, abs=1e-9)
            assert g.sigma == pytest.approx(w.sigma, rel=1e-9, abs=1e-9)
        compared += 1
    assert compared > 1500


def test_trueskill_match_quality_equals_the_library_value():
    import trueskill

    env = trueskill.TrueSkill(tau=0, backend=None)
    rater = TrueSkillRater()
    for a, b in [
        (Skill(25, 8.3), Skill(25, 8.3)),
        (Skill(30, 2), Skill(21, 5)),
        (Skill(10, 1), Skill(40, 1)),
    ]:
        want = trueskill.quality_1vs1(
            env.create_rating(a.mu, a.sigma), env.create_rating(b.mu, b.sigma), env=env
        )
        assert rater.match_quality(a, b) == pytest.approx(want, rel=1e-12)


def test_match_quality_prefers_close_opponents():
    rater = TrueSkillRater()
    me = Skill(25, 2)
    assert rater.match_quality(me, Skill(25.5, 2)) > rater.match_quality(me, Skill(32, 2))


def test_reset_uncertainty_keeps_the_mean_and_restores_the_initial_sigma():
    for rater in (TrueSkillRater(), OpenSkillRater()):
        assert rater.reset_uncertainty(Skill(31.5, 1.2)) == Skill(31.5, rater.initial().sigma)


def test_conservative_skill_is_mu_minus_three_sigma():
    assert Skill(30.0, 2.0).conservative == 24.0


@pytest.mark.parametrize("outcome", [2.0, -1.0, 0.25, None])
def test_an_invalid_outcome_is_refused(outcome):
    with pytest.raises(ValueError, match="outcome"):
        TrueSkillRater().rate(Skill(25, 8), Skill(25, 8), outcome)


def test_openskill_winner_gains_loser_loses_and_both_get_surer():
    rater = OpenSkillRater()
    a, b = rater.initial(), rater.initial()
    na, nb = rater.rate(a, b, 1.0)
    assert na.mu > a.mu and nb.mu < b.mu
    assert na.sigma < a.sigma and nb.sigma < b.sigma


def test_openskill_draw_between_equals_keeps_means_equal():
    rater = OpenSkillRater()
    na, nb = rater.rate(rater.initial(), rater.initial(), 0.5)
    assert na.mu == pytest.approx(nb.mu)


def test_raters_are_deterministic():
    for name in ("trueskill", "openskill"):
        r1, r2 = get_rater(name), get_rater(name)
        a, b = Skill(27, 4), Skill(22, 6)
        assert r1.rate(a, b, 1.0) == r2.rate(a, b, 1.0)


def test_get_rater_passes_parameters_and_refuses_unknown_names():
    assert get_rater("trueskill", draw_probability=0.2).params["draw_probability"] == 0.2
    assert get_rater("openskill", model="BradleyTerryFull").name == "openskill"
    with pytest.raises(ValueError, match="unknown rater"):
        get_rater("elo")


def test_win_probability_favours_the_stronger():
    rater = TrueSkillRater()
    assert rater.win_probability(Skill(30, 1), Skill(20, 1)) > 0.9
    assert rater.win_probability(Skill(25, 3), Skill(25, 3)) == pytest.approx(0.5)
