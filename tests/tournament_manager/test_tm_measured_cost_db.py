"""Duel lengths priced by what the game's duels cost the fleet: the fit, and matchmaking that follows it."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from tm_factories import play

from core.models import Duel
from tournament_manager.actions import matchmake
from tournament_manager.duel_plan import DuelCost
from tournament_manager.measured_cost import MIN_DUELS, fit_duel_cost, measured_duel_cost, recent_samples

W1, W2, D = "PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW"
SETTINGS_MODEL = DuelCost(fixed_s=0.3, per_match_s=0.05)


def test_the_fit_finds_the_fixed_and_per_match_cost_through_noise_and_stalls():
    rng = random.Random(7)
    samples = [(n, 1.2 + 0.03 * n + rng.uniform(-0.05, 0.05)) for n in (2, 4, 8, 16) for _ in range(15)]
    samples += [(4, 40.0), (8, 55.0)]  # two duels stalled behind a slow engine
    fitted = fit_duel_cost(samples, SETTINGS_MODEL)
    assert fitted.fixed_s == pytest.approx(1.2, abs=0.06)
    assert fitted.per_match_s == pytest.approx(0.03, abs=0.006)


def test_one_length_keeps_the_settings_per_match_cost_and_too_few_duels_keep_the_settings():
    one_length = fit_duel_cost([(2, 1.1)] * MIN_DUELS, SETTINGS_MODEL)
    assert one_length.per_match_s == SETTINGS_MODEL.per_match_s
    assert one_length.fixed_s == pytest.approx(1.1 - 2 * 0.05)
    assert fit_duel_cost([(2, 1.1)] * (MIN_DUELS - 1), SETTINGS_MODEL) == SETTINGS_MODEL
    # Cheaper than the floors (clock noise, a negative slope): never free.
    floor = fit_duel_cost([(2, 0.0)] * MIN_DUELS + [(16, 0.0)] * MIN_DUELS, SETTINGS_MODEL)
    assert floor.fixed_s > 0 and floor.per_match_s > 0


def _finished_duels(make_competitor, count: int, fixed_s: float, per_match_s: float) -> None:
    """``count`` recorded duels of 2 or 4 matches whose slot time (claim to record) follows the model."""
    players = [make_competitor() for _ in range(4)]
    for k in range(count):
        results = [W1, W2] if k % 2 else [W1, W2, D, D]
        duel = play(players[k % 4], players[(k + 1) % 4], results)
        held = timedelta(seconds=fixed_s + per_match_s * len(results))
        Duel.objects.filter(pk=duel.pk).update(started_at=duel.finished_at - held)


def test_the_samples_are_the_slot_time_and_matches_played_of_recorded_duels(hidden_env, make_competitor):
    _finished_duels(make_competitor, 6, fixed_s=2.0, per_match_s=0.5)
    assert sorted(recent_samples(hidden_env.pk)) == [(2, 3.0)] * 3 + [(4, 4.0)] * 3


def test_matchmaking_lengthens_duels_when_the_fleet_measures_a_dear_start(
    hidden_env, make_competitor, settings
):
    settings.TM_MIN_DUEL_MATCHES = 2
    settings.TM_MAX_DUEL_MATCHES = 0  # 4 x the game's matches_per_duel (4) = 16
    settings.TM_DUEL_FIXED_SECONDS, settings.TM_DUEL_MATCH_SECONDS = 0.3, 0.05
    settings.TM_PLACEMENT_MATCHES = 0
    settings.TM_DAILY_DUELS = 0
    _finished_duels(make_competitor, MIN_DUELS + 4, fixed_s=3.0, per_match_s=0.05)
    for _ in range(4):
        make_competitor()
    measured = measured_duel_cost(hidden_env.pk, SETTINGS_MODEL)
    assert measured.fixed_s == pytest.approx(3.0, abs=0.01)
    assert measured.per_match_s == pytest.approx(0.05, abs=0.01)

    settings.TM_DUEL_COST_FROM_DUELS = False  # the settings' cheap start: the shortest duels
    off = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=2)
    assert off and all(d.num_matches == 2 for d in off)
    Duel.objects.filter(pk__in=[d.pk for d in off]).delete()

    settings.TM_DUEL_COST_FROM_DUELS = True  # what the fleet measured: a start ten times dearer
    on = matchmake(hidden_env.pk, rng=random.Random(1), batch_size=2)
    assert on and all(d.num_matches > 2 for d in on)
