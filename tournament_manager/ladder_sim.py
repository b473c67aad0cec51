"""An event-driven simulation of the production ladder, charged in worker-seconds.

What it reproduces: matchmaking runs every ``matchmake_interval_s`` and tops the queue up to
``queue_target`` duels queued or running (``TM_LADDER_QUEUE_TARGET``); ``workers`` duels run at once
(worker concurrency), first in first out; a duel of ``k`` matches occupies its worker for
``cost.seconds(k)`` (:class:`~tournament_manager.duel_plan.DuelCost`) and its matches alternate the first
move (the referee's rule), are drawn when it starts (so that a duel that stops when decided,
``LadderSetup.stop_test``, occupies its worker and is charged for the matches it played), are rated one
by one when the duel finishes (a match lost to an error teaches
nothing but was paid for), and the competitors' ``in_flight``, ``last_played_at`` and duels of the last
24 hours are what matchmaking sees. Worker-seconds are counted when a duel finishes. The results are also
kept as a pair table (what ``PairRecord`` holds), refitted by the leaderboard's Bradley-Terry fit
(:func:`tournament_manager.settled.fit_table`) at most every ``fit_every_s`` (production: the tie fit's
debounce ``TM_TIE_FIT_DELAY_SECONDS``), and matchmaking gets that fit (its settled pairs and the pairs
it needs played).

The league is anything with ``n_agents``, ``play(first, second) -> 1.0 | 0.5 | 0.0 | None`` and
``pairs_correct(scores)`` (:class:`~tournament_manager.simulation.SimulatedLeague`,
:class:`~tournament_manager.simulation.FixtureLeague`). Agents can join later (:meth:`LadderSimulation.add`).
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

import numpy as np

from tournament_manager.duel_plan import DuelCost
from tournament_manager.matchmaking import Candidate, PlannedDuel
from tournament_manager.rating import Rater, Skill
from tournament_manager.settled import (
    NEAR,
    OPEN_PAIR_MATCHES,
    PAIR_MATCHES,
    TIE_MARGIN,
    PairFit,
    fit_table,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
DAY_S = 86_400.0

#: (candidates, batch size, rng, now, the latest leaderboard fit or None) -> duels to queue.
Planner = Callable[[list[Candidate], int, random.Random, datetime, PairFit | None], list[PlannedDuel]]


class Stopper(Protocol):
    """A running sequential test of one duel (``run_duel.stopping.SequentialTest``)."""

    def add_pair(self, scores: list[tuple[float, float]]) -> None: ...

    def decided(self) -> str | None: ...


class League(Protocol):
    """What the simulation needs from a league."""

    @property
    def n_agents(self) -> int: ...

    def play(self, first: int, second: int) -> float | None: ...

    def pairs_correct(self, scores: list[float]) -> float: ...


@dataclass(frozen=True)
class LadderSetup:
    """The production configuration the simulation runs."""

    workers: int
    queue_target: int
    matchmake_interval_s: float
    default_matches: int
    cost: DuelCost
    #: The leaderboard's fit is refreshed at most this often (simulated seconds); None: never fitted.
    fit_every_s: float | None = 60.0
    fit_bootstrap: int = 100
    tie_margin: float = TIE_MARGIN
    pair_matches: int = PAIR_MATCHES
    near: int = NEAR
    open_matches: int = OPEN_PAIR_MATCHES
    #: Duels that stop when decided: a new sequential test per duel (``run_duel.stopping.SequentialTest``
    #: or anything with ``add_pair`` and ``decided``); None: every duel plays all its matches.
    stop_test: Callable[[], Stopper] | None = None


@dataclass
class _Agent:
    skill: Skill
    matches: int = 0
    last_played_s: float | None = None
    in_flight: int = 0
    recent: deque = field(default_factory=deque)  # start times of its duels in the last 24 h


class LadderSimulation:
    """One ladder run; :meth:`run` advances it, the attributes are its state."""

    def __init__(
        self,
        league: League,
        rater: Rater,
        planner: Planner,
        setup: LadderSetup,
        seed: int,
        agents: list[int] | None = None,
    ) -> None:
        self.league, self.rater, self.planner, self.setup = league, rater, planner, setup
        self.rng = random.Random(seed)
        self.agents: dict[int, _Agent] = {}
        for i in range(league.n_agents) if agents is None else agents:
            self.add(i)
        self.now_s = 0.0
        self.worker_seconds = 0.0
        self.duels_finished = 0
        self.matches_played = 0
        #: Duels the stop test ended before their planned length.
        self.stopped_early = 0
        #: (start time, a, b, matches) of every duel started.
        self.started: list[tuple[float, int, int, int]] = []
        self._queue: deque[tuple[int, int, int]] = deque()
        self._running: list[tuple[float, int, int, int, list[float | None]]] = []
        self._free = setup.workers
        self._next_matchmake = 0.0
        self._seq = 0
        #: (low, high) -> [low's losses, draws, wins]: the pair table the leaderboard fits.
        self.table: dict[tuple[int, int], list[int]] = {}
        self.fit: PairFit | None = None
        self._fit_at = -float("inf")
        self._fit_results = 0
        self.results = 0

    def add(self, agent: int) -> None:
        """``agent`` joins the ladder (at the rater's initial skill)."""
        self.agents[agent] = _Agent(self.rater.initial())

    def skills(self) -> dict[int, Skill]:
        """Current skill of every agent in the ladder."""
        return {i: a.skill for i, a in self.agents.items()}

    def pairs_correct(self) -> float:
        """Share of pairs ordered right by the leaderboard's ``mu - 3 sigma`` (all agents in the ladder)."""
        scores = [
            self.agents[i].skill.conservative if i in self.agents else 0.0
            for i in range(self.league.n_agents)
        ]
        return self.league.pairs_correct(scores)

    def _candidates(self) -> list[Candidate]:
        now = self.now_s
        out = []
        for i, a in self.agents.items():
            while a.recent and a.recent[0] <= now - DAY_S:
                a.recent.popleft()
            last = None if a.last_played_s is None else START + timedelta(seconds=a.last_played_s)
            out.append(Candidate(i, a.skill, a.matches, last, a.in_flight, duels_today=len(a.recent)))
        return out

    def current_fit(self, bootstrap: int | None = None, keep_replicates: bool = False) -> PairFit:
        """The leaderboard's fit of every result so far (ids are the agents)."""
        keys = sorted(self.table)
        ids = sorted({i for k in keys for i in k})
        index = {c: x for x, c in enumerate(ids)}
        pairs = np.array([(index[a], index[b]) for a, b in keys], dtype=np.int64).reshape(-1, 2)
        table = np.array([self.table[k] for k in keys], dtype=np.float64).reshape(-1, 3)
        return fit_table(
            ids,
            pairs,
            table,
            seed=self._seq,
            bootstrap=self.setup.fit_bootstrap if bootstrap is None else bootstrap,
            margin=self.setup.tie_margin,
            keep_replicates=keep_replicates,
            pair_matches=self.setup.pair_matches,
            near=self.setup.near,
            open_matches=self.setup.open_matches,
        )

    def _refit(self) -> None:
        every = self.setup.fit_every_s
        if every is None or self.results == self._fit_results or self.now_s - self._fit_at < every:
            return
        self.fit = self.current_fit()
        self._fit_at, self._fit_results = self.now_s, self.results

    def _matchmake(self) -> None:
        busy = len(self._queue) + len(self._running)
        batch = max(0, self.setup.queue_target - busy)
        if batch:
            self._refit()
            now = START + timedelta(seconds=self.now_s)
            for duel in self.planner(self._candidates(), batch, self.rng, now, self.fit):
                a, b = (duel.a, duel.b) if self.rng.random() < 0.5 else (duel.b, duel.a)
                k = duel.matches or self.setup.default_matches
                self._queue.append((a, b, k))
                for c in (a, b):
                    self.agents[c].in_flight += 1
        self._start_queued()

    def _play(self, a: int, b: int, k: int) -> list[float | None]:
        """The outcomes (a's view) of a duel of ``k`` matches, first move alternating, cut after the
        first whole pair at which the setup's stop test is decided (a pair with a lost match is no
        evidence), as the referee does."""
        test = self.setup.stop_test() if self.setup.stop_test is not None else None
        outcomes: list[float | None] = []
        for i in range(k):
            first, second = (a, b) if i % 2 == 0 else (b, a)
            outcome = self.league.play(first, second)
            outcomes.append(outcome if outcome is None or first == a else 1.0 - outcome)
            pair = outcomes[-2:]
            if test is None or len(outcomes) % 2 or len(outcomes) >= k or None in pair:
                continue
            test.add_pair([(o, 1.0 - o) for o in pair if o is not None])
            if test.decided():
                self.stopped_early += 1
                break
        return outcomes

    def _start_queued(self) -> None:
        while self._free and self._queue:
            a, b, k = self._queue.popleft()
            self._free -= 1
            self._seq += 1
            outcomes = self._play(a, b, k)
            end = self.now_s + self.setup.cost.seconds(len(outcomes))
            heapq.heappush(self._running, (end, self._seq, a, b, outcomes))
            self.started.append((self.now_s, a, b, k))
            for c in (a, b):
                self.agents[c].recent.append(self.now_s)

    def _finish(self) -> None:
        end, _, a, b, outcomes = heapq.heappop(self._running)
        self.now_s = end
        sa, sb = self.agents[a], self.agents[b]
        for outcome in outcomes:
            self.matches_played += 1
            if outcome is None:
                continue
            sa.skill, sb.skill = self.rater.rate(sa.skill, sb.skill, outcome)
            low_outcome = outcome if a < b else 1.0 - outcome
            self.table.setdefault((min(a, b), max(a, b)), [0, 0, 0])[round(low_outcome * 2)] += 1
            self.results += 1
            sa.matches += 1
            sb.matches += 1
        for s in (sa, sb):
            s.in_flight -= 1
            s.last_played_s = end
        self.worker_seconds += self.setup.cost.seconds(len(outcomes))
        self.duels_finished += 1
        self._free += 1
        self._start_queued()

    def run(
        self, until: Callable[[LadderSimulation], bool], max_time_s: float, rest_s: float | None = None
    ) -> bool:
        """Advance event by event until ``until(self)`` after a finished duel, simulated ``max_time_s``, or
        (with ``rest_s``) the ladder has had no duel in flight for ``rest_s``; returns whether it rests."""
        quiet_since = self.now_s
        while self.now_s < max_time_s:
            if self._running or self._queue:
                quiet_since = self.now_s
            elif rest_s is not None and self.now_s - quiet_since >= rest_s:
                return True
            if self._running and self._running[0][0] <= self._next_matchmake:
                self._finish()
                if until(self):
                    return False
            else:
                self.now_s = self._next_matchmake
                self._matchmake()
                self._next_matchmake += self.setup.matchmake_interval_s
        return False
