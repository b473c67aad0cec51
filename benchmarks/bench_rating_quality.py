"""How fast do ratings find the true order? Our matchmaking vs the previous design, round robin, random.

Drives the real ``tournament_manager.matchmaking.choose_pairs`` (with the production defaults of
``MatchmakingPolicy`` unless overridden) and the real rater on a ``SimulatedLeague`` (the TrueSkill/Dask
article's test game: 0.3 upset chance, 0.2 draws, one match in ten lost to errors). The ladder is run in
batches of ``--batch`` concurrent duels of one match each; the x-axis counts every match played,
including the failed ones (they cost a worker slot but teach nothing). Every ``--step`` matches it
records the share of agent pairs ordered like their hidden levels and Kendall's tau, ranking by the
conservative skill mu - 3 sigma (what the leaderboard shows) and by mu; it prints the mean and the minimum
over seeds. "previous" is the first design of the ordering pass (the most uncertain competitor against
its most informative opponent, plus a quarter of random pairs), kept here for comparison.

    .venv/bin/python benchmarks/bench_rating_quality.py            # 32 and 64 agents, 2,000 matches
    .venv/bin/python benchmarks/bench_rating_quality.py --agents 64 --seeds 10
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from tournament_manager.editions import round_robin_rounds
from tournament_manager.matchmaking import Candidate, MatchmakingPolicy, choose_pairs, informativeness
from tournament_manager.rating import Rater, get_rater
from tournament_manager.simulation import SimulatedLeague

Pairer = Callable[[list[Candidate], int, random.Random, datetime], list[tuple[int, int]]]
START = datetime(2026, 1, 1, tzinfo=UTC)


def ours(rater: Rater, policy: MatchmakingPolicy) -> Pairer:
    """Our matchmaking."""

    def pair(cands: list[Candidate], batch: int, rng: random.Random, now: datetime) -> list[tuple[int, int]]:
        return choose_pairs(cands, batch, rater, rng, now, policy)

    return pair


def previous(rater: Rater, policy: MatchmakingPolicy) -> Pairer:
    """The first design: placement as now, then the most uncertain competitor against its most informative
    opponent, and a quarter of uniformly random pairs (its idle pass is left out: it rarely fires here)."""

    def pair(cands: list[Candidate], batch: int, rng: random.Random, now: datetime) -> list[tuple[int, int]]:
        placed = [c for c in cands if c.matches < policy.placement_matches]
        pairs: list[tuple[int, int]] = []
        pool = {c.id: c for c in cands}
        for c in sorted(placed, key=lambda c: -c.skill.sigma):
            if len(pairs) >= batch or len(pool) < 2:
                return pairs
            if c.id in pool:
                del pool[c.id]
                o = max(pool.values(), key=lambda o: informativeness(rater, c.skill, o.skill))
                del pool[o.id]
                pairs.append((c.id, o.id))
        remaining = min(batch - len(pairs), len(pool) // 2)
        n_random = int(remaining * 0.25) + (rng.random() < remaining * 0.25 - int(remaining * 0.25))
        for _ in range(remaining - n_random):
            focus = max(pool.values(), key=lambda c: c.skill.sigma)
            del pool[focus.id]
            o = max(pool.values(), key=lambda o: informativeness(rater, focus.skill, o.skill))
            del pool[o.id]
            pairs.append((focus.id, o.id))
        chosen = rng.sample(list(pool), 2 * n_random)
        return pairs + list(zip(chosen[0::2], chosen[1::2], strict=True))

    return pair


def round_robin(n: int) -> Pairer:
    """Every pair once per cycle (circle method, shuffled rounds), then again."""
    rounds_rng = random.Random(12345)

    def schedule() -> Iterator[tuple[int, int]]:
        while True:
            rounds = round_robin_rounds(list(range(n)))
            rounds_rng.shuffle(rounds)
            for rnd in rounds:
                yield from rnd

    it = schedule()

    def pair(cands: list[Candidate], batch: int, rng: random.Random, now: datetime) -> list[tuple[int, int]]:
        return [next(it) for _ in range(batch)]

    return pair


def random_pairs(
    cands: list[Candidate], batch: int, rng: random.Random, now: datetime
) -> list[tuple[int, int]]:
    """Disjoint uniformly random pairs."""
    chosen = rng.sample([c.id for c in cands], 2 * batch)
    return list(zip(chosen[0::2], chosen[1::2], strict=True))


def run(
    league: SimulatedLeague, rater: Rater, pairer: Pairer, batch: int, max_matches: int, step: int, seed: int
) -> dict[int, tuple[float, float, float]]:
    """Play ``max_matches``; every ``step`` record (pairs correct by conservative, by mu, Kendall tau)."""
    n = league.n_agents
    skills = [rater.initial()] * n
    matches = [0] * n
    last: list[datetime | None] = [None] * n
    rng = random.Random(seed)
    curve: dict[int, tuple[float, float, float]] = {}
    played, tick = 0, 0
    while played < max_matches:
        now = START + timedelta(minutes=tick)
        cands = [Candidate(i, skills[i], matches[i], last[i]) for i in range(n)]
        for a, b in pairer(cands, min(batch, max_matches - played), rng, now):
            outcome = league.play(a, b)
            played += 1
            last[a] = last[b] = now
            if outcome is not None:
                skills[a], skills[b] = rater.rate(skills[a], skills[b], outcome)
                matches[a] += 1
                matches[b] += 1
            if played % step == 0:
                cons = [s.conservative for s in skills]
                mus = [s.mu for s in skills]
                curve[played] = (
                    league.pairs_correct(cons),
                    league.pairs_correct(mus),
                    league.kendall_tau(cons),
                )
        tick += 1
    return curve


def first_reaching(curve: dict[int, float], target: float) -> int | None:
    """First checkpoint at which the curve reaches ``target`` and stays there."""
    hit = None
    for m in sorted(curve):
        hit = (hit or m) if curve[m] >= target else None
    return hit


def main() -> None:
    """Run the comparison and print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--max-matches", type=int, default=2000)
    ap.add_argument("--step", type=int, default=100)
    ap.add_argument("--batch", type=int, default=8, help="duels in flight at once (workers)")
    ap.add_argument("--rater", default="trueskill")
    ap.add_argument("--beta", type=float, default=None, help="rater's performance noise (default: its own)")
    ap.add_argument("--draw-probability", type=float, default=None, help="TrueSkill's draw probability")
    default = MatchmakingPolicy()
    ap.add_argument("--placement", type=int, default=default.placement_matches, help="placement, in matches")
    ap.add_argument("--random-share", type=float, default=default.random_share)
    ap.add_argument("--neighbours", type=int, default=default.neighbours)
    ap.add_argument("--only", nargs="+", help="strategies to run (ours, previous, round-robin, random)")
    args = ap.parse_args()

    params = {"beta": args.beta} if args.beta is not None else {}
    if args.draw_probability is not None:
        params["draw_probability"] = args.draw_probability
    rater = get_rater(args.rater, **params)
    policy = MatchmakingPolicy(
        placement_matches=args.placement, random_share=args.random_share, neighbours=args.neighbours
    )
    print(
        f"rater={rater.name} {rater.params} batch={args.batch} seeds={args.seeds} placement={args.placement} "
        f"random_share={args.random_share} neighbours={args.neighbours}; error probability 0.1 "
        "(errors count as played matches)"
    )
    for n in args.agents:
        t0 = time.perf_counter()
        strategies: dict[str, Callable[[], Pairer]] = {
            "ours": lambda: ours(rater, policy),
            "previous": lambda: previous(rater, policy),
            "round-robin": lambda n=n: round_robin(n),
            "random": lambda: random_pairs,
        }
        strategies = {k: v for k, v in strategies.items() if not args.only or k in args.only}
        results: dict[str, list[dict[int, tuple[float, float, float]]]] = {k: [] for k in strategies}
        for seed in range(args.seeds):
            for name, make in strategies.items():
                league = SimulatedLeague(n, seed=1000 + seed)
                results[name].append(
                    run(league, rater, make(), args.batch, args.max_matches, args.step, seed)
                )
        print(f"\n=== {n} agents ({n * (n - 1) // 2} pairs), {time.perf_counter() - t0:.1f} s ===")
        print("pairs correct by conservative skill (mu - 3 sigma): mean (min) over seeds; then mean by mu")
        print(f"{'matches':>7} | " + " | ".join(f"{k:^24}" for k in strategies))
        for m in sorted(results[next(iter(strategies))][0]):
            cells = []
            for k in strategies:
                cons = [c[m][0] for c in results[k]]
                mu = statistics.fmean(c[m][1] for c in results[k])
                cells.append(f"{statistics.fmean(cons):.3f} ({min(cons):.3f}) {mu:.3f}")
            print(f"{m:>7} | " + " | ".join(f"{c:^24}" for c in cells))
        for target in (0.95, 0.99):
            for which, idx in (("conservative", 0), ("mu", 1)):
                hits = {
                    k: first_reaching(
                        {m: statistics.fmean(c[m][idx] for c in curves) for m in curves[0]}, target
                    )
                    for k, curves in results.items()
                }
                text = ", ".join(f"{k} {v if v else '>' + str(args.max_matches)}" for k, v in hits.items())
                print(f"matches to reach {target:.2f} pairs correct (by {which}, mean curve): {text}")


if __name__ == "__main__":
    main()
