"""The ladder simulation plays duels that stop when decided as the referee does, and charges them for the
matches they played."""

from __future__ import annotations

from run_duel.stopping import SequentialTest, StopRule
from tournament_manager.duel_plan import DuelCost
from tournament_manager.ladder_sim import LadderSetup, LadderSimulation
from tournament_manager.matchmaking import PlannedDuel
from tournament_manager.rating import TrueSkillRater
from tournament_manager.simulation import FixtureLeague

COST = DuelCost(fixed_s=0.3, per_match_s=0.05)
#: Rows (first, second, first's wins, draws, first's losses).
A_ALWAYS_WINS = [("a", "b", 10, 0, 0), ("b", "a", 0, 0, 10)]
FIRST_MOVER_WINS = [("a", "b", 10, 0, 0), ("b", "a", 10, 0, 0)]


def _run(stop: bool, rows: list[tuple[str, str, int, int, int]]) -> LadderSimulation:
    league = FixtureLeague(["a", "b"], [0.6, 0.4], rows, seed=1)
    setup = LadderSetup(
        workers=1,
        queue_target=1,
        matchmake_interval_s=60,
        default_matches=40,
        cost=COST,
        fit_every_s=None,
        stop_test=(lambda: SequentialTest(StopRule())) if stop else None,
    )

    def planner(cands, n, rng, now, fit):
        return [PlannedDuel(0, 1, 40)] if cands[0].in_flight == 0 else []

    sim = LadderSimulation(league, TrueSkillRater(), planner, setup, seed=1)
    sim.run(lambda s: s.duels_finished >= 5, max_time_s=3600)
    return sim


def test_a_duel_won_outright_stops_after_seven_pairs_and_is_charged_for_fourteen_matches():
    sim = _run(stop=True, rows=A_ALWAYS_WINS)
    assert sim.duels_finished == sim.stopped_early == 5
    assert sim.matches_played == 5 * 14
    assert abs(sim.worker_seconds - 5 * COST.seconds(14)) < 1e-9
    assert sum(sim.table[(0, 1)]) == 5 * 14  # the fit sees the matches played


def test_without_a_stop_test_or_between_equal_players_every_match_is_played():
    assert _run(stop=False, rows=A_ALWAYS_WINS).matches_played == 5 * 40
    level = _run(stop=True, rows=FIRST_MOVER_WINS)  # every pair is split
    assert level.stopped_early == 0 and level.matches_played == 5 * 40
