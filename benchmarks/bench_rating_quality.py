"""How fast do ratings find the true order, per worker-second, in the production configuration?

Every strategy runs the event-driven ladder of ``tournament_manager.ladder_sim`` with what production
runs (read from the settings, i.e. the environment and ``example.env``'s defaults): the rater
(``TM_RATER``/``TM_RATER_PARAMS``), matchmaking every ``TM_MATCHMAKE_INTERVAL_SECONDS`` topping the queue
up to ``TM_LADDER_QUEUE_TARGET``, ``WORKER_CONCURRENCY`` duels at once, duel lengths from the game's
``info.yml`` (``matches_per_duel``), and each duel charged the Docker sandbox's cost model
(``fixed_s + per_match_s x matches``, measured by ``benchmarks/duel_cost.py`` into
``benchmarks/fixtures/duel_cost.json``; the real-game league adds the agents' own thinking time per match
from its fixture). Strategies:

* **ours** - ``plan_duels`` with the production policy (``ladder_policy``: duel length per pairing,
  pairs by expected information per worker-second, settled pairs rest, daily budget);
* **today** - the previous production matchmaking (``choose_pairs`` with ``MatchmakingPolicy()``'s
  defaults, every duel ``matches_per_duel`` long, no resting);
* **round robin** - every pair once per cycle (shuffled rounds), ``matches_per_duel`` per duel;
* **random** - disjoint uniformly random pairs, ``matches_per_duel`` per duel.

Leagues: **synthetic** - 64 agents of the TrueSkill/Dask article's game (``SimulatedLeague``: 0.3 upset
chance, 0.2 draws, one match in ten lost to an error, paid for but teaching nothing); **connect-four** -
the real-game league of ``benchmarks/fixtures/connect_four_league.json`` (13 Connect Four agents, outcomes
sampled per ordered pair from a long round robin played with the real referee; regenerate it with
``benchmarks/fixtures/make_connect_four_league.py``). Accuracy is the share of agent pairs that the
leaderboard's ``mu - 3 sigma`` orders like the truth.

Then the resting measurements on a 10-agent league (the first ten Connect Four agents of the fixture in
its order, minus one held out): duels per hour once it is settled (after ``--settle-hours`` simulated
hours), ours against today; and the time from an upload (the held-out agent joins) to its settled rank.

    .venv/bin/python benchmarks/bench_rating_quality.py               # both leagues, 10 seeds
    .venv/bin/python benchmarks/bench_rating_quality.py --seeds 3 --leagues connect-four

The last line reads ``worker-seconds to 0.95: ours N, round robin M`` (synthetic league, mean curve).
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
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from environments import get_info  # noqa: E402
from tournament_manager.actions import get_environment_rater, ladder_policy, ladder_queue_target  # noqa: E402
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
#: The matchmaking production ran before duel lengths, resting and budgets.
TODAY = MatchmakingPolicy(placement_matches=10, rests=False, daily_duels=0)


def policy_planner(rater: Rater, policy: MatchmakingPolicy) -> Planner:
    """Matchmaking by ``plan_duels`` with ``policy``."""

    def plan(
        cands: list[Candidate], batch: int, rng: random.Random, now: datetime, settled=None
    ) -> list[PlannedDuel]:
        return plan_duels(cands, batch, rater, rng, now, policy, settled)

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


def curve_of(sim: LadderSimulation, budget_s: float, step_s: float) -> dict[float, float]:
    """Accuracy every ``step_s`` worker-seconds until ``budget_s`` (or 0.999 held for a while)."""
    curve: dict[float, float] = {}
    mark = [step_s]

    def until(s: LadderSimulation) -> bool:
        while s.worker_seconds >= mark[0]:
            curve[mark[0]] = s.pairs_correct()
            mark[0] += step_s
        return s.worker_seconds >= budget_s

    if sim.run(until, max_time_s=1e9, rest_s=DAY_S):
        curve[mark[0]] = sim.pairs_correct()  # it rests: the rest of the curve stays where it is
    return curve


def at(curve: dict[float, float], x: float) -> float:
    """The curve's value at ``x``: its last checkpoint at or before ``x`` (a resting ladder stays put)."""
    before = [k for k in curve if k <= x + 1e-9]
    return curve[max(before)] if before else curve[min(curve)]


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


def production_setup(matches_per_duel: int, cost: DuelCost) -> LadderSetup:
    """Workers, queue target and matchmaking interval from the settings."""
    return LadderSetup(
        workers=settings.CELERY_WORKER_CONCURRENCY,
        queue_target=queue_target(),
        matchmake_interval_s=settings.TM_MATCHMAKE_INTERVAL_SECONDS,
        default_matches=matches_per_duel,
        cost=cost,
    )


def load_cost() -> tuple[str, DuelCost, dict]:
    """The stored cost measurement of the sandbox production runs (warm when ``DUEL_SANDBOX_REUSE``)."""
    data = json.loads((FIXTURES / "duel_cost.json").read_text())
    mode = "warm" if getattr(settings, "DUEL_SANDBOX_REUSE", False) else "cold"
    return mode, DuelCost(data[mode]["fixed_s"], data[mode]["per_match_s"]), data


def run_league(
    name: str, make_league: Callable[[int], object], cost: DuelCost, args: argparse.Namespace, rater: Rater
) -> dict[str, dict[float, float | None]]:
    """Curves of every strategy on one league; prints the table; returns worker-seconds to each target."""
    info = get_info("connect-four" if name == "connect-four" else "hidden-skill")
    setup = production_setup(info.matches_per_duel, cost)
    n = make_league(0).n_agents
    policy = ladder_policy(info.matches_per_duel, cost)
    strategies: dict[str, Callable[[int], Planner]] = {
        "ours": lambda seed: policy_planner(rater, policy),
        "today": lambda seed: policy_planner(rater, TODAY),
        "round-robin": lambda seed: round_robin(n, 12345 + seed),
        "random": lambda seed: random_pairs,
    }
    strategies = {k: v for k, v in strategies.items() if not args.only or k in args.only}
    budget = args.budget_duels * cost.seconds(info.matches_per_duel)
    step = budget / args.points
    t0 = time.perf_counter()
    curves: dict[str, list[dict[float, float]]] = {k: [] for k in strategies}
    for seed in range(args.seeds):
        for k, make in strategies.items():
            sim = LadderSimulation(make_league(seed), rater, make(seed), setup, seed)
            curves[k].append(curve_of(sim, budget, step))
    print(
        f"\n=== {name}: {n} agents ({n * (n - 1) // 2} pairs), {info.matches_per_duel} matches a duel "
        "(info.yml), "
        f"cost {cost.fixed_s:.3f} s + {cost.per_match_s:.4f} s/match, workers {setup.workers}, queue target "
        f"{setup.queue_target}, matchmaking every {setup.matchmake_interval_s:g} s; "
        f"{time.perf_counter() - t0:.0f} s ==="
    )
    print(
        f"ours: lengths {policy.duel_lengths[0]}-{policy.duel_lengths[-1]}, settled by the Bradley-Terry "
        f"fit's difference intervals, daily budget "
        f"{policy.daily_duels or 'none'}"
    )
    print("pairs ordered right by mu - 3 sigma: mean (worst seed)")
    print(f"{'worker-s':>9} | " + " | ".join(f"{k:^15}" for k in strategies))
    xs = [step * i for i in range(1, args.points + 1)]
    for x in xs[:: max(1, len(xs) // 12)]:
        cells = []
        for k in strategies:
            vals = [at(c, x) for c in curves[k]]
            cells.append(f"{statistics.fmean(vals):.3f} ({min(vals):.3f})")
        print(f"{x:>9.0f} | " + " | ".join(f"{c:^15}" for c in cells))
    reached: dict[str, dict[float, float | None]] = {}
    for k, cs in curves.items():
        reached[k] = {}
        for target in TARGETS:
            mean_curve = {x: statistics.fmean(at(c, x) for c in cs) for x in xs}
            per_seed = [first_reaching({x: at(c, x) for x in xs}, target) for c in cs]
            worst = None if None in per_seed else max(per_seed)
            reached[k][target] = first_reaching(mean_curve, target)
            reached[k][("worst", target)] = worst
    for target in TARGETS:
        text = ", ".join(
            f"{k} {fmt(r[target])} (worst seed {fmt(r[('worst', target)])})" for k, r in reached.items()
        )
        print(f"worker-seconds to {target:.2f}: {text}")
        if "ours" in reached and "round-robin" in reached:
            ours, rr = reached["ours"][("worst", target)], reached["round-robin"][target]
            ratio = f"{ours / rr:.2f}" if ours and rr else "n/a"
            print(f"  goal {target:.2f}: ours' worst seed / round robin's mean = {ratio} (goal <= 0.40)")
    return reached


def fmt(x: float | None) -> str:
    """Worker-seconds or '>' budget."""
    return f"{x:.0f}" if x is not None else "not reached"


def sub_league(seed: int) -> tuple[FixtureLeague, int]:
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
    names = {a["name"] for a in chosen}
    rows = [row for row in data["pairs"] if row[0] in names and row[1] in names]
    return FixtureLeague([a["name"] for a in chosen], [a["score"] for a in chosen], rows, seed), 10


def after_upload(
    sim: LadderSimulation, league: FixtureLeague, new: int, hours: float
) -> tuple[float, int, float]:
    """``new`` joins: seconds until its rank among the others (by mu - 3 sigma, against the fixture's
    standings) is right for good, its duels, and the seconds from the upload to its last duel (within
    ``hours``; after it, its rating no longer moves)."""
    joined = sim.now_s
    sim.add(new)
    history: list[tuple[float, bool]] = []

    def watch(s: LadderSimulation) -> bool:
        cons = {i: sk.conservative for i, sk in s.skills().items()}
        ok = all((cons[new] > cons[i]) == (league.scores[new] > league.scores[i]) for i in cons if i != new)
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
    """Duels per hour of a settled 10-agent league, ours vs today; time from upload to a settled rank."""
    info = get_info("connect-four")
    setup = production_setup(info.matches_per_duel, cost)
    policy = ladder_policy(info.matches_per_duel, cost)
    warm = args.settle_hours * 3600.0
    print(f"\n=== resting: 10 Connect Four agents, after {args.settle_hours:g} simulated hours ===")
    for label, pol in (("today", TODAY), ("ours", policy)):
        per_hour, rank_s, duels, last_s = [], [], [], []
        for seed in range(args.seeds):
            league, new = sub_league(seed)
            sim = LadderSimulation(
                league, rater, policy_planner(rater, pol), setup, seed, agents=list(range(new))
            )
            sim.run(lambda s: False, max_time_s=warm)
            before = len(sim.started)
            sim.run(lambda s: False, max_time_s=warm + 3600.0)
            per_hour.append(len(sim.started) - before)
            r, d, last = after_upload(sim, league, new, hours=6.0)
            rank_s.append(r)
            duels.append(d)
            last_s.append(last)
        print(
            f"{label:>5}: {statistics.fmean(per_hour):.1f} duels per hour once settled (worst seed "
            f"{max(per_hour)}); an upload's rank is right for good {statistics.median(rank_s):.0f} s after "
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
        "--budget-duels", type=int, default=8000, help="worker-seconds of this many default duels"
    )
    ap.add_argument("--points", type=int, default=200, help="checkpoints per curve")
    ap.add_argument("--only", nargs="+", help="strategies (ours, today, round-robin, random)")
    ap.add_argument("--settle-hours", type=float, default=6.0)
    ap.add_argument("--no-resting", action="store_true")
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
    results = {}
    for name in args.leagues:
        if name == "synthetic":
            results[name] = run_league(
                name, lambda seed: SimulatedLeague(args.agents, seed=1000 + seed), docker, args, rater
            )
        else:
            c4 = DuelCost(docker.fixed_s, docker.per_match_s + fixture["play_seconds_per_match"])
            results[name] = run_league(
                name,
                lambda seed: FixtureLeague.from_file(str(FIXTURES / "connect_four_league.json"), seed),
                c4,
                args,
                rater,
            )
    if not args.no_resting:
        resting(DuelCost(docker.fixed_s, docker.per_match_s + fixture["play_seconds_per_match"]), rater, args)
    print(f"\nload average {os.getloadavg()[0]:.2f}")
    headline = results.get("synthetic") or next(iter(results.values()))
    if "ours" in headline and "round-robin" in headline:
        ours, rr = fmt(headline["ours"][0.95]), fmt(headline["round-robin"][0.95])
        print(f"worker-seconds to 0.95: ours {ours}, round robin {rr}")


if __name__ == "__main__":
    main()
