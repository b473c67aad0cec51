"""Significant head-to-head cycles and the Nash population view of a pair table."""

from __future__ import annotations

import numpy as np
import pytest

from tournament_manager.intransitivity import nash_population, significant_cycles

IDS = ["rock", "paper", "scissors", "weak"]
PAIRS = np.array([[0, 1], [1, 2], [0, 2], [0, 3], [1, 3], [2, 3]])


def rps(games: int, upset: int) -> np.ndarray:
    """The low index's (losses, draws, wins): paper beats rock, scissors beats paper, rock beats scissors."""
    win, lose = (games - upset, 0, upset), (upset, 0, games - upset)
    return np.array([win[::-1], win[::-1], lose[::-1], (0, 0, games), (0, 0, games), (0, 0, games)], float)


def test_a_cycle_is_found_once_when_every_edge_is_significant():
    (cycle,) = significant_cycles(IDS, PAIRS, rps(50, 5))
    assert {cycle.a, cycle.b, cycle.c} == {"rock", "paper", "scissors"}
    assert cycle.ab == cycle.bc == cycle.ca == pytest.approx(0.9)


def test_a_cycle_within_the_noise_is_not_significant():
    assert significant_cycles(IDS, PAIRS, rps(10, 4)) == []  # 6-4 on every edge: could be chance
    assert significant_cycles(IDS, PAIRS, rps(3, 0)) == []  # too few results (min_games 4)


def test_a_transitive_league_has_no_cycle():
    table = np.array([(5, 0, 45)] * 6, dtype=float)  # the lower index always wins
    assert significant_cycles(IDS, PAIRS, table) == []


def test_the_population_view_of_rock_paper_scissors():
    population = nash_population(IDS, PAIRS, rps(50, 5))
    for name in ("rock", "paper", "scissors"):
        mass, margin = population[name]
        assert mass == pytest.approx(1 / 3, abs=1e-6) and margin == pytest.approx(0.0, abs=1e-9)
    assert population["weak"][0] == pytest.approx(0.0, abs=1e-9)
    assert population["weak"][1] == pytest.approx(-0.5)  # it loses every match to each of them
