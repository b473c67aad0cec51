"""How fast does the leaderboard find the true order, per worker-second, in the production configuration?

**What is scored.** The leaderboard estimates each agent's Bradley-Terry strength with every pair weighted
the same (``tournament_manager.settled.fit_table``; ranks by expected score against the field follow it):
the round robin's Bradley-Terry fit. The truth is that fit on a 200-match-per-pair round robin: the
Connect Four fixture's own counts (13 real agents, played with the real referee), or for the synthetic
league (64 agents of the TrueSkill/Dask article's game) the exact outcome probabilities of its hidden
levels at 200 matches a pair. A pair is **clearly different** when its true difference is above two
standard errors of that 200-match truth (bootstrap). Every strategy's results are scored by the same
estimator (the leaderboard's weighted fit of its pair table):

* **clear pairs ordered right**: the share of clearly different pairs the estimate orders like the truth;
* **coverage**: the share of pairs at most five places apart in the true order whose true difference
  lies inside the estimate's 95 % bootstrap interval of that difference (what "=" and "settled" rest on),
  at every ``--coverage-every``-th checkpoint; a pair the estimate has not seen both agents of is not
  covered.

Every strategy runs the event-driven ladder of ``tournament_manager.ladder_sim`` with what production
runs (read from the settings): the rater (``TM_RATER``/``TM_RATER_PARAMS``), matchmaking every
``TM_MATCHMAKE_INTERVAL_SECONDS`` topping the queue up to the ladder's queue target, ``WORKER_CONCURRENCY``
duels at once, duel lengths from the game's ``info.yml`` (``matches_per_duel``), and each duel charged the
Docker sandbox's cost model (``benchmarks/duel_cost.py`` -> ``benchmarks/fixtures/duel_cost.json``; the
Connect Four league adds its agents' own thinking time per match). Strategies:

* **ours** - ``plan_duels`` with the production policy (``ladder_policy``: duel length per pairing, pairs
  by expected information per worker-second, pairs the stored Bradley-Terry fit has settled rest, the fit
  refreshed every ``TM_TIE_FIT_DELAY_SECONDS`` of simulated time, daily budget), its duels stopping when
  decided as the referee's ladder duels do (``run_duel.stopping``; ``--no-stop`` or ``TM_DUEL_STOP_EARLY``
  off: every match played) and priced by matchmaking at their expected matches;
* **ours-priced-at-cap** (``--only``) - ours with every duel priced at its full length (the cost model
  before it knew that duels stop);
* **round robin** - every pair once per cycle (shuffled rounds), ``matches_per_duel`` per duel;
* **random** - disjoint uniformly random pairs, ``matches_per_duel`` per duel;
* **today** (``--only today``) - the ladder before duel lengths and resting.

Then the resting measurements on a 10-agent Connect Four league (one agent held out): duels per hour once
settled (after ``--settle-hours`` simulated hours), ours against round robin's pace; and the time from an
upload (the held-out agent joins) to its right place in the fit's order.

    .venv/bin/python benchmarks/bench_rating_quality.py               # both leagues, 10 seeds
    .venv/bin/python benchmarks/bench_rating_quality.py --seeds 3 --leagues connect-four

The last line reads ``worst seed, clear pairs to 0.95: ours N ws, round robin M ws (ratio R); coverage C``
(the league with the worse ratio; C the lowest mean coverage of ours at any checkpoint, both leagues).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from environments import get_info  # noqa: E402
from environments.hidden_skill.rules import LEVELS, MAX_RAND_PROB, MAX_TIE_PROB  # noqa: E402
from run_duel.stopping import SequentialTest, StopRule  # noqa: E402
from tournament_manager.actions import get_environment_rater, ladder_policy, ladder_queue_target  # noqa: E402
from tournament_manager.bradley_terry import fit_pair_counts  # noqa: E402
from tournament_manager.duel_plan import DuelCost  # noqa: E402
from tournament_manager.editions import round_robin_rounds  # noqa: E402
from tournament_manager.ladder_sim import DAY_S, LadderSetup, LadderSimulation, Planner  # noqa: E402
from tournament_manager.matchmaking import (  # noqa: E402
    Candidate,
    MatchmakingPolicy,
    PlannedDuel,
    plan_duels,
)
from tournament_manager.rating import Rater  # noqa: E402
from tournament_manager.simulation import FixtureLeague, SimulatedLeague  # noqa: E402

FIXTURES = REPO / "benchmarks" / "fixtures"
TARGETS = (0.95, 0.99)
#: Matches per pair of the truth (the fixture's round robin; the synthetic truth at the same size).
TRUTH_MATCHES = 200
#: Coverage is measured on pairs at most this many places apart in the true order: the differences the
#: leaderboard's "=" and matchmaking's "settled" rest on (TM_NEIGHBOURS). Far pairs' differences are shown
#: nowhere, and a one-number model cannot reproduce them where outcomes saturate (the synthetic game's
#: better agent always wins beyond a 0.3 level gap) or strategies cycle.
NEAR = 5
#: The matchmaking production ran before duel lengths, resting and budgets.
TODAY = MatchmakingPolicy(placement_matches=10, rests=False, daily_duels=0)


# --- the truth ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Truth:
    """The estimand on a league: Bradley-Terry strengths of a 200-match-per-pair round robin."""

    theta: np.ndarray
    #: Pairs (i < j) whose true difference is above two standard errors of the truth.
    clear_i: np.ndarray
    clear_j: np.ndarray
    #: Pairs at most ``NEAR`` places apart in the true order (coverage is measured on them).
    near_i: np.ndarray
    near_j: np.ndarray

    @property
    def n(self) -> int:
        return self.theta.size


def truth_of(n: int, pairs: np.ndarray, table: np.ndarray, seed: int = 0) -> Truth:
    """The fit of a full round robin's pair table (every pair equally often: no weights needed) and its
    clearly different pairs (bootstrap standard errors of each difference)."""
    bt = fit_pair_counts(n, pairs, table, bootstrap=200, seed=seed, keep_replicates=True)
    i, j = np.triu_indices(n, 1)
    diff = bt.theta[i] - bt.theta[j]
    se = np.std(bt.replicates[:, i] - bt.replicates[:, j], axis=0)
    clear = np.abs(diff) > 2 * se
    place = np.empty(n, dtype=np.int64)
    place[np.argsort(-bt.theta)] = np.arange(n)
    near = np.abs(place[i] - place[j]) <= NEAR
    return Truth(bt.theta, i[clear], j[clear], i[near], j[near])


def fixture_table(names: list[str], rows: list) -> tuple[np.ndarray, np.ndarray]:
    """Pair table (low index's losses, draws, wins) of rows ``(first, second, wins, draws, losses)``."""
    index = {name: k for k, name in enumerate(names)}
    cells: dict[tuple[int, int], np.ndarray] = {}
    for first, second, wins, draws, losses in rows:
        a, b = index[first], index[second]
        low_view = (losses, draws, wins) if a < b else (wins, draws, losses)
        cells.setdefault((min(a, b), max(a, b)), np.zeros(3))[:] += low_view
    keys = sorted(cells)
    return np.array(keys, dtype=np.int64), np.array([cells[k] for k in keys])


def synthetic_table(levels: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Expected pair table of the hidden-skill game at ``TRUTH_MATCHES`` matches a pair (errors aside)."""
    n = len(levels)
    pairs, table = [], []
    for a in range(n):
        for b in range(a + 1, n):
            gap = abs(levels[a] - levels[b]) / LEVELS
            lucky = max(0.0, MAX_RAND_PROB - gap)
            draw = lucky * max(0.0, MAX_TIE_PROB - gap)
            upset = lucky - draw
            better = 1.0 - lucky
            a_wins, a_loses = (better, upset) if levels[a] > levels[b] else (upset, better)
            pairs.append((a, b))
            table.append((a_loses * TRUTH_MATCHES, draw * TRUTH_MATCHES, a_wins * TRUTH_MATCHES))
    return np.array(pairs, dtype=np.int64), np.array(table)


# --- scoring a simulation -----------------------------------------------------------------------------------


def score(sim: LadderSimulation, truth: Truth, coverage: bool) -> tuple[float, float | None]:
    """(share of clearly different pairs ordered right, coverage or None) of the simulation's results,
    fitted the leaderboard's way. Agents without results order nothing and cover nothing."""
    fit = sim.current_fit(bootstrap=100 if coverage else 0, keep_replicates=coverage)
    est = np.full(truth.n, np.nan)
    for cid, (theta, _, _) in fit.intervals.items():
        est[cid] = theta
    d_est = est[truth.clear_i] - est[truth.clear_j]
    d_true = truth.theta[truth.clear_i] - truth.theta[truth.clear_j]
    right = np.where(
        np.isnan(d_est), 0.0, np.where(d_est == 0, 0.5, (np.sign(d_est) == np.sign(d_true)) * 1.0)
    )
    ordered = float(right.mean()) if right.size else 1.0
    if not coverage:
        return ordered, None
    i, j = truth.near_i, truth.near_j
    covered = np.zeros(i.size)
    if fit.replicates is not None and len(fit.ids):
        col = np.full(truth.n, -1)
        col[list(fit.ids)] = np.arange(len(fit.ids))
        seen = (col[i] >= 0) & (col[j] >= 0)
        diffs = fit.replicates[:, col[i[seen]]] - fit.replicates[:, col[j[seen]]]
        low, high = np.percentile(diffs, [2.5, 97.5], axis=0)
        point = est[i[seen]] - est[j[seen]]
        low, high = np.minimum(low, point), np.maximum(high, point)
        true = truth.theta[i[seen]] - truth.theta[j[seen]]
        covered[seen] = (low <= true) & (true <= high)
    return ordered, float(covered.mean())


# --- strategies ---------------------------------------------------------------------------------------------


def policy_planner(rater: Rater, policy: MatchmakingPolicy) -> Planner:
    """Matchmaking by ``plan_duels`` with ``policy`` and the simulation's stored fit's settled pairs."""

    def plan(
        cands: list[Candidate], batch: int, rng: random.Random, now: datetime, fit=None
    ) -> list[PlannedDuel]:
        settled, to_play = (fit.needs_no_duel, fit.needs_play) if fit is not None else (None, ())
        return plan_duels(cands, batch, rater, rng, now, policy, settled, to_play)

    return plan


def round_robin(n: int, seed: int) -> Planner:
    """Every pair once per cycle (circle method, shuffled rounds), then again."""
    rounds_rng = random.Random(seed)

    def schedule() -> Iterator[tuple[int, int]]:
        while True:
            rounds = round_robin_rounds(list(range(n)))
            rounds_rng.shuffle(rounds)
            for rnd in rounds:
                yield from rnd

    it = schedule()

    def plan(
        cands: list[Candidate], batch: int, rng: random.Random, now: datetime, settled=None
    ) -> list[PlannedDuel]:
        return [PlannedDuel(*next(it)) for _ in range(batch)]

    return plan


def random_pairs(
    cands: list[Candidate], batch: int, rng: random.Random, now: datetime, settled=None
) -> list[PlannedDuel]:
    """Disjoint uniformly random pairs among the competitors without a duel in flight."""
    free = [c.id for c in cands if c.in_flight == 0]
    chosen = rng.sample(free, 2 * min(batch, len(free) // 2))
    return [PlannedDuel(a, b) for a, b in zip(chosen[0::2], chosen[1::2], strict=True)]


# --- curves -------------------------------------------------------------------------------------------------


def curve_of(
    sim: LadderSimulation, truth: Truth, budget_s: float, step_s: float, coverage_every: int
) -> tuple[dict[float, float], dict[float, float]]:
    """(clear pairs ordered right, coverage) every ``step_s`` worker-seconds until ``budget_s``; a ladder
    that rests for a simulated day keeps its last values."""
    curve: dict[float, float] = {}
    cover: dict[float, float] = {}
    mark = [step_s, 1]

    def check(s: LadderSimulation) -> None:
        with_cov = mark[1] % coverage_every == 0
        ordered, cov = score(s, truth, with_cov)
        curve[mark[0]] = ordered
        if cov is not None:
            cover[mark[0]] = cov

    def until(s: LadderSimulation) -> bool:
        while s.worker_seconds >= mark[0] and mark[0] <= budget_s + 1e-9:
            check(s)
            mark[0] += step_s
            mark[1] += 1
        return s.worker_seconds >= budget_s

    if sim.run(until, max_time_s=1e9, rest_s=DAY_S):
        while mark[0] <= budget_s + 1e-9:  # it rests: the rest of the curve stays where it is
            check(sim)
            mark[0] += step_s
            mark[1] += 1
    return curve, cover


def at(curve: dict[float, float], x: float) -> float:
    """The curve's value at ``x``: its last checkpoint at or before ``x``."""
    before = [k for k in curve if k <= x + 1e-9]
    return curve[max(before)] if before else 0.0


def first_reaching(curve: dict[float, float], target: float) -> float | None:
    """First checkpoint from which the curve stays at or above ``target``."""
    hit = None
    for x in sorted(curve):
        hit = (hit or x) if curve[x] >= target else None
    return hit


def queue_target() -> int:
    """``ladder_queue_target()`` for one game served by one worker of ``WORKER_CONCURRENCY`` slots (without
    ``TM_LADDER_QUEUE_TARGET`` production reads the live workers' slots from the database)."""
    if getattr(settings, "TM_LADDER_QUEUE_TARGET", None) is not None:
        return ladder_queue_target()
    factor = float(getattr(settings, "TM_LADDER_SLOT_FACTOR", 2.0))
    return math.ceil(factor * settings.CELERY_WORKER_CONCURRENCY)


def stops_early(args: argparse.Namespace) -> bool:
    """Whether ladder duels stop when decided: setting ``TM_DUEL_STOP_EARLY``, unless ``--no-stop``."""
    return not args.no_stop and bool(getattr(settings, "TM_DUEL_STOP_EARLY", True))


def ours_setup(
    matches_per_duel: int, cost: DuelCost, setup: LadderSetup, args: argparse.Namespace
) -> tuple[MatchmakingPolicy, LadderSetup]:
    """Production's ladder policy and, when ladder duels stop when decided (:func:`stops_early`), the
    setup whose duels stop by the referee's rule (matchmaking then prices them at their expected
    matches); otherwise every match is played and priced."""
    policy = ladder_policy(matches_per_duel, cost)
    if not stops_early(args):
        return replace(policy, stop_rule=None), setup
    rule = policy.stop_rule or StopRule()
    return policy, replace(setup, stop_test=lambda: SequentialTest(rule))


def production_setup(matches_per_duel: int, cost: DuelCost) -> LadderSetup:
    """Workers, queue target, matchmaking interval, tie-fit refresh, bootstrap size and margin from the
    settings."""
    return LadderSetup(
        workers=settings.CELERY_WORKER_CONCURRENCY,
        queue_target=queue_target(),
        matchmake_interval_s=settings.TM_MATCHMAKE_INTERVAL_SECONDS,
        default_matches=matches_per_duel,
        cost=cost,
        fit_every_s=float(settings.TM_TIE_FIT_DELAY_SECONDS),
        fit_bootstrap=int(settings.TM_TIE_FIT_BOOTSTRAP),
        tie_margin=float(settings.TM_TIE_MARGIN),
        pair_matches=int(settings.TM_PAIR_MATCHES),
        near=int(settings.TM_NEIGHBOURS),
        open_matches=int(settings.TM_OPEN_PAIR_MATCHES),
    )


def load_cost() -> tuple[str, DuelCost, dict]:
    """The stored cost measurement of the sandbox production runs (warm when ``DUEL_SANDBOX_REUSE``)."""
    data = json.loads((FIXTURES / "duel_cost.json").read_text())
    mode = "warm" if getattr(settings, "DUEL_SANDBOX_REUSE", False) else "cold"
    return mode, DuelCost(data[mode]["fixed_s"], data[mode]["per_match_s"]), data


@dataclass
class LeagueResult:
    """Worker-seconds to each target per strategy (mean curve, worst seed) and ours' coverage."""

    reached: dict[str, dict]
    coverage_min: float


def run_league(
    name: str,
    make_league: Callable[[int], object],
    make_truth: Callable[[object], Truth],
    cost: DuelCost,
    args: argparse.Namespace,
    rater: Rater,
) -> LeagueResult:
    """Curves of every strategy on one league; prints the tables."""
    info = get_info("connect-four" if name == "connect-four" else "hidden-skill")
    setup = production_setup(info.matches_per_duel, cost)
    unfitted = replace(setup, fit_every_s=None)  # baselines ignore settled pairs: no refits to pay for
    n = make_league(0).n_agents
    policy, stopping = ours_setup(info.matches_per_duel, cost, setup, args)
    strategies: dict[str, tuple[Callable[[int], Planner], LadderSetup]] = {
        "ours": (lambda seed: policy_planner(rater, policy), stopping),
        # Ours with each duel priced at its cap, as before matchmaking knew that duels stop (--only).
        "ours-priced-at-cap": (lambda seed: policy_planner(rater, replace(policy, stop_rule=None)), stopping),
        "round-robin": (lambda seed: round_robin(n, 12345 + seed), unfitted),
        "random": (lambda seed: random_pairs, unfitted),
        "today": (lambda seed: policy_planner(rater, TODAY), unfitted),
    }
    wanted = args.only or ["ours", "round-robin", "random"]
    strategies = {k: v for k, v in strategies.items() if k in wanted}
    budget = args.budget_duels * cost.seconds(info.matches_per_duel)
    step = budget / args.points
    t0 = time.perf_counter()
    curves: dict[str, list[dict[float, float]]] = {k: [] for k in strategies}
    covers: dict[str, list[dict[float, float]]] = {k: [] for k in strategies}
    n_clear = []
    stopped = {k: [0, 0] for k in strategies}  # duels stopped when decided, duels finished
    for seed in range(args.seeds):
        truth = make_truth(make_league(seed))
        n_clear.append(truth.clear_i.size)
        for k, (make, su) in strategies.items():
            sim = LadderSimulation(make_league(seed), rater, make(seed), su, seed)
            curve, cover = curve_of(sim, truth, budget, step, args.coverage_every)
            stopped[k][0] += sim.stopped_early
            stopped[k][1] += sim.duels_finished
            curves[k].append(curve)
            covers[k].append(cover)
    print(
        f"\n=== {name}: {n} agents ({n * (n - 1) // 2} pairs, {min(n_clear)}-{max(n_clear)} clearly "
        f"different), {info.matches_per_duel} matches a duel (info.yml), cost {cost.fixed_s:.3f} s + "
        f"{cost.per_match_s:.4f} s/match, workers {setup.workers}, queue target {setup.queue_target}, "
        f"matchmaking every {setup.matchmake_interval_s:g} s, fit every {setup.fit_every_s:g} s; "
        f"{time.perf_counter() - t0:.0f} s ==="
    )
    print(
        f"ours: lengths {policy.duel_lengths[0]}-{policy.duel_lengths[-1]}, settled by the Bradley-Terry fit "
        f"(difference interval excludes 0 or within +-{setup.tie_margin:g}), daily budget "
        f"{policy.daily_duels or 'none'}"
    )
    for k in ("ours", "ours-priced-at-cap"):
        if k in stopped:
            early, finished = stopped[k]
            print(
                f"{k}: {early} of {finished} duels stopped when decided"
                + (
                    " (run_duel.stopping, as the referee does for ladder duels)"
                    if stops_early(args)
                    else " (--no-stop or TM_DUEL_STOP_EARLY=off: every match played)"
                )
            )
    print("clearly different pairs ordered right: mean (worst seed); coverage of the 95 % intervals")
    print(f"{'worker-s':>9} | " + " | ".join(f"{k:^26}" for k in strategies))
    xs = [step * i for i in range(1, args.points + 1)]
    for x in xs[:: max(1, len(xs) // 12)]:
        cells = []
        for k in strategies:
            vals = [at(c, x) for c in curves[k]]
            covs = [at(c, x) for c in covers[k] if c and min(c) <= x]
            cov = f"cov {statistics.fmean(covs):.2f}" if covs else ""
            cells.append(f"{statistics.fmean(vals):.3f} ({min(vals):.3f}) {cov}")
        print(f"{x:>9.0f} | " + " | ".join(f"{c:^26}" for c in cells))
    reached: dict[str, dict] = {}
    for k, cs in curves.items():
        reached[k] = {}
        for target in TARGETS:
            mean_curve = {x: statistics.fmean(at(c, x) for c in cs) for x in xs}
            per_seed = [first_reaching({x: at(c, x) for x in xs}, target) for c in cs]
            reached[k][target] = first_reaching(mean_curve, target)
            reached[k][("worst", target)] = None if None in per_seed else max(per_seed)
    coverage_min = {}
    for k, cs in covers.items():
        points = sorted({x for c in cs for x in c})
        means = [statistics.fmean(c[x] for c in cs if x in c) for x in points]
        coverage_min[k] = min(means) if means else float("nan")
        worst = min((v for c in cs for v in c.values()), default=float("nan"))
        print(f"coverage, {k}: lowest mean over checkpoints {coverage_min[k]:.3f}, lowest seed {worst:.3f}")
    for target in TARGETS:
        text = ", ".join(
            f"{k} {fmt(r[target])} (worst seed {fmt(r[('worst', target)])})" for k, r in reached.items()
        )
        print(f"worker-seconds to {target:.2f} of clear pairs: {text}")
        if "ours" in reached and "round-robin" in reached:
            ours, rr = reached["ours"][("worst", target)], reached["round-robin"][("worst", target)]
            ratio = f"{ours / rr:.2f}" if ours and rr else "n/a"
            print(
                f"  goal {target:.2f}: ours' worst seed / round robin's worst seed = {ratio} (goal <= 0.40)"
            )
    return LeagueResult(reached, coverage_min.get("ours", float("nan")))


def fmt(x: float | None) -> str:
    """Worker-seconds or 'not reached'."""
    return f"{x:.0f}" if x is not None else "not reached"


# --- resting ------------------------------------------------------------------------------------------------


def sub_league(seed: int) -> tuple[FixtureLeague, int, Truth]:
    """Eleven agents of the Connect Four fixture; the one that uploads later is returned last (index 10):
    of the middle half of the table, the one farthest in score from its neighbours (a near-tie has no
    right rank to reach)."""
    data = json.loads((FIXTURES / "connect_four_league.json").read_text())
    agents = sorted(data["agents"], key=lambda a: -a["score"])
    n = len(agents)

    def gap(i: int) -> float:
        return min(abs(agents[i]["score"] - agents[j]["score"]) for j in (i - 1, i + 1))

    held_out = agents[max(range(n // 4, n - n // 4), key=gap)]
    chosen = [*[a for a in agents if a is not held_out][:10], held_out]
    names = [a["name"] for a in chosen]
    rows = [row for row in data["pairs"] if row[0] in names and row[1] in names]
    league = FixtureLeague(names, [a["score"] for a in chosen], rows, seed)
    return league, 10, truth_of(len(names), *fixture_table(names, rows))


def after_upload(sim: LadderSimulation, truth: Truth, new: int, hours: float) -> tuple[float, int, float]:
    """``new`` joins: seconds until its place among the others in the stored fit's order is right for
    good, its duels, and the seconds from the upload to its last duel (within ``hours``)."""
    joined = sim.now_s
    sim.add(new)
    history: list[tuple[float, bool]] = []

    def watch(s: LadderSimulation) -> bool:
        fit = s.fit
        ok = False
        if fit is not None and new in fit.intervals:
            th = {i: v[0] for i, v in fit.intervals.items()}
            ok = all((th[new] > th[i]) == (truth.theta[new] > truth.theta[i]) for i in th if i != new)
        history.append((s.now_s, ok))
        return False

    sim.run(watch, max_time_s=joined + hours * 3600.0)
    right_from = None
    for t, ok in history:
        right_from = (right_from or t) if ok else None
    mine = [t for t, a, b, _ in sim.started if new in (a, b) and t >= joined]
    rank_s = (right_from - joined) if right_from is not None else float("inf")
    return rank_s, len(mine), (max(mine) - joined) if mine else 0.0


def resting(cost: DuelCost, rater: Rater, args: argparse.Namespace) -> None:
    """Duels per hour of a settled 10-agent league (ours; today's ladder for scale); time from upload to
    a right place."""
    info = get_info("connect-four")
    setup = production_setup(info.matches_per_duel, cost)
    policy, stopping = ours_setup(info.matches_per_duel, cost, setup, args)
    warm = args.settle_hours * 3600.0
    print(f"\n=== resting: 10 Connect Four agents, after {args.settle_hours:g} simulated hours ===")
    for label, pol, su in (("today", TODAY, setup), ("ours", policy, stopping)):
        per_hour, rank_s, duels, last_s = [], [], [], []
        for seed in range(args.seeds):
            league, new, truth = sub_league(seed)
            sim = LadderSimulation(
                league, rater, policy_planner(rater, pol), su, seed, agents=list(range(new))
            )
            sim.run(lambda s: False, max_time_s=warm)
            before = len(sim.started)
            sim.run(lambda s: False, max_time_s=warm + 3600.0)
            per_hour.append(len(sim.started) - before)
            r, d, last = after_upload(sim, truth, new, hours=6.0)
            rank_s.append(r)
            duels.append(d)
            last_s.append(last)
        print(
            f"{label:>5}: {statistics.fmean(per_hour):.1f} duels per hour once settled (worst seed "
            f"{max(per_hour)}); an upload's place is right for good {statistics.median(rank_s):.0f} s after "
            f"it (median; worst seed {max(rank_s):.0f} s); it plays {statistics.fmean(duels):.0f} duels in "
            f"6 h, the last {statistics.median(last_s):.0f} s after the upload (median)"
        )


def main() -> None:
    """Run the comparison and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leagues", nargs="+", default=["synthetic", "connect-four"])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--agents", type=int, default=64, help="agents of the synthetic league")
    ap.add_argument(
        "--budget-duels", type=int, default=3000, help="worker-seconds of this many default duels"
    )
    ap.add_argument("--points", type=int, default=150, help="checkpoints per curve")
    ap.add_argument("--coverage-every", type=int, default=10, help="coverage at every N-th checkpoint")
    ap.add_argument(
        "--only", nargs="+", help="strategies (ours, round-robin, random, today, ours-priced-at-cap)"
    )
    ap.add_argument("--settle-hours", type=float, default=6.0)
    ap.add_argument("--no-resting", action="store_true")
    ap.add_argument("--no-stop", action="store_true", help="ours' duels play every match (no stop rule)")
    args = ap.parse_args()
    rater = get_environment_rater()
    mode, docker, measured = load_cost()
    fixture = json.loads((FIXTURES / "connect_four_league.json").read_text())
    print(
        f"load average {os.getloadavg()[0]:.2f}; rater {rater.name} {rater.params}; {mode} Docker duel cost "
        f"{docker.fixed_s:.3f} s + {docker.per_match_s:.4f} s/match (benchmarks/duel_cost.py, "
        f"{measured['measured_at']}, load {measured['load_average_before'][0]}); Connect Four agents think "
        f"{fixture['play_seconds_per_match']:.4f} s/match (fixture of {fixture['generated_at']})"
    )
    names = [a["name"] for a in fixture["agents"]]
    c4_truth = truth_of(len(names), *fixture_table(names, fixture["pairs"]))
    c4_cost = DuelCost(docker.fixed_s, docker.per_match_s + fixture["play_seconds_per_match"])
    results: dict[str, LeagueResult] = {}
    for name in args.leagues:
        if name == "synthetic":
            results[name] = run_league(
                name,
                lambda seed: SimulatedLeague(args.agents, seed=1000 + seed),
                lambda league: truth_of(league.n_agents, *synthetic_table(league.levels)),
                docker,
                args,
                rater,
            )
        else:
            results[name] = run_league(
                name,
                lambda seed: FixtureLeague.from_file(str(FIXTURES / "connect_four_league.json"), seed),
                lambda league: c4_truth,
                c4_cost,
                args,
                rater,
            )
    if not args.no_resting:
        resting(c4_cost, rater, args)
    print(f"\nload average {os.getloadavg()[0]:.2f}")
    worst_name, worst_ratio, line = None, -1.0, None
    for name, res in results.items():
        if "ours" not in res.reached or "round-robin" not in res.reached:
            continue
        ours, rr = res.reached["ours"][("worst", 0.95)], res.reached["round-robin"][("worst", 0.95)]
        ratio = ours / rr if ours and rr else float("inf")
        if ratio > worst_ratio:
            worst_name, worst_ratio, line = name, ratio, (ours, rr)
    if line is not None:
        coverage = min(r.coverage_min for r in results.values())
        ratio_text = f"{worst_ratio:.2f}" if math.isfinite(worst_ratio) else "n/a"
        print(
            f"worst seed, clear pairs to 0.95: ours {fmt(line[0])} ws, round robin {fmt(line[1])} ws "
            f"(ratio {ratio_text}); coverage {coverage:.3f}"
            + (f" [{worst_name}]" if len(results) > 1 else "")
        )


if __name__ == "__main__":
    main()
