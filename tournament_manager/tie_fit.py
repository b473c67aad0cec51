"""The Bradley-Terry tie fit of an environment: computed in the background, stored, read by the leaderboard.

The leaderboard's shared ranks come from a Bradley-Terry fit over every rated match (see
:mod:`tournament_manager.bradley_terry`). Fitting never happens on a web request:

- :func:`request_refresh` is called after ratings change (the ``rate_environment`` task, recomputation)
  and by the leaderboard when no fit is stored. It is debounced per environment: the first call sends
  ``tournament_manager.refresh_tie_fit`` with a countdown of ``TM_TIE_FIT_DELAY_SECONDS`` (60) and later
  calls within that window send nothing, so a busy ladder gets at most one fit per window, and that fit
  covers every duel rated before it starts.
- :func:`refresh` (the task's body) reads the win/draw/loss counts per pair of competitors that the
  record path keeps in ``PairRecord`` (one row per pair, never one per match), fits them, and stores the
  result with :func:`store`.
- :func:`stored_fit` is what the leaderboard reads: no query, no fitting. A missing fit means "no tie
  groups yet" (every competitor its own rank), never an error.

Storage: the Django cache with no expiry (Redis in production, shared by every process) and a JSON file
under ``DATA_DIR/tournament_manager/`` (the embedded setup's cache is per process; the file is shared by
the processes of one machine). Readers take whichever copy was computed last. Storing a new fit also
bumps the environment's ``Rating.updated_at`` so pages cached per ratings version show the new ranks.
The periodic ``tournament_manager.refresh_tie_fits`` task re-requests any fit older than its
environment's latest rating (a lost hint, a flushed cache).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, F, Max, Q
from django.db.models.functions import Greatest, Least
from django.utils import timezone

from core.actions.ratings import mark_ratings_updated
from core.models import Duel, Match, PairRecord
from tournament_manager.intransitivity import Cycle, nash_population, significant_cycles
from tournament_manager.settled import (
    NEAR,
    OPEN_PAIR_MATCHES,
    PAIR_MATCHES,
    TIE_MARGIN,
    is_settled,
    knows_order,
)
from tournament_manager.settled import fit_table as settled_fit

log = logging.getLogger(__name__)

TASK_NAME = "tournament_manager.refresh_tie_fit"
RATED_KINDS = (Duel.Kind.LADDER, Duel.Kind.TOURNAMENT)
_FORMAT = 6
#: Above this many competitors no population view is computed (a linear program over the whole table).
POPULATION_MAX = 500
R = Match.Result
#: Results won by player 1 / player 2: a player's own error is its loss; OTHER_ERROR counts for nothing.
_P1_WINS = (R.PLAYER_1_WIN, R.PLAYER_2_ERROR)
_P2_WINS = (R.PLAYER_2_WIN, R.PLAYER_1_ERROR)


@dataclass(frozen=True)
class TieFit:
    """A stored fit: competitor id -> (strength, lower, upper), and what it was computed from."""

    intervals: dict[int, tuple[float, float, float]]
    #: Latest ``rated_at`` of the environment when the fit read its data (None: nothing rated yet).
    rated_until: datetime | None
    computed_at: datetime
    n_results: int
    method: str
    #: Settled pairs ``(a, b)`` -> ``"order"`` or ``"tie"`` (:mod:`tournament_manager.settled`).
    settled: dict[tuple[int, int], str] = field(default_factory=dict)
    #: The tie margin (log-strength) the verdicts used.
    margin: float = TIE_MARGIN
    #: Whether every pair was checked (else far pairs fall back to the competitors' own intervals).
    checked_all: bool = True
    #: Competitor id -> (expected score against the whole field, lower, upper): what the ladder ranks by.
    scores: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    #: Near pairs still to play (:func:`tournament_manager.settled.needs_play`): never settled.
    needs_play: frozenset[tuple[int, int]] = frozenset()
    #: Pairs with ``TM_PAIR_MATCHES`` results or more (counted fully), but for near pairs whose order is
    #: still open with fewer than ``TM_OPEN_PAIR_MATCHES`` (:func:`tournament_manager.settled.open_pairs`).
    full: frozenset[tuple[int, int]] = frozenset()
    #: Significant head-to-head cycles (:mod:`tournament_manager.intransitivity`).
    cycles: tuple[Cycle, ...] = ()
    #: Competitor id -> (Nash mass, payoff against the Nash mixture); empty above ``POPULATION_MAX``.
    population: dict[int, tuple[float, float]] = field(default_factory=dict)

    def is_settled(self, a: int, b: int) -> bool:
        """Whether the pair's order or tie is known (never for a competitor the fit has not seen)."""
        if (a, b) in self.needs_play or (b, a) in self.needs_play:
            return False
        return is_settled(a, b, self.settled, self.intervals, self.margin, self.checked_all)

    def worth_playing(self, a: int, b: int) -> bool:
        """Whether a duel between them can still move the leaderboard: not settled and not full."""
        return not self.is_settled(a, b) and (a, b) not in self.full and (b, a) not in self.full

    def needs_no_duel(self, a: int, b: int) -> bool:
        """Matchmaking's test: settled, or full (see :meth:`worth_playing`)."""
        return not self.worth_playing(a, b)

    def knows_order(self, a: int, b: int) -> bool:
        """Whether the fit knows which of the two is stronger (else they share a rank)."""
        return knows_order(a, b, self.settled, self.intervals, self.checked_all)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (the stored form)."""
        return {
            "format": _FORMAT,
            "rated_until": self.rated_until.isoformat() if self.rated_until else None,
            "computed_at": self.computed_at.isoformat(),
            "n_results": self.n_results,
            "method": self.method,
            "intervals": {str(c): list(v) for c, v in self.intervals.items()},
            "settled": [[a, b, v] for (a, b), v in self.settled.items()],
            "margin": self.margin,
            "checked_all": self.checked_all,
            "scores": {str(c): list(v) for c, v in self.scores.items()},
            "needs_play": sorted([a, b] for a, b in self.needs_play),
            "full": sorted([a, b] for a, b in self.full),
            "cycles": [[c.a, c.b, c.c, c.ab, c.bc, c.ca] for c in self.cycles],
            "population": {str(c): list(v) for c, v in self.population.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TieFit | None:
        """The fit stored as ``data``, or None when it is not in the current format."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            return None
        rated_until = data["rated_until"]
        return cls(
            intervals={int(c): (float(v[0]), float(v[1]), float(v[2])) for c, v in data["intervals"].items()},
            rated_until=datetime.fromisoformat(rated_until) if rated_until else None,
            computed_at=datetime.fromisoformat(data["computed_at"]),
            n_results=int(data["n_results"]),
            method=str(data["method"]),
            settled={(int(a), int(b)): str(v) for a, b, v in data["settled"]},
            margin=float(data["margin"]),
            checked_all=bool(data["checked_all"]),
            scores={int(c): (float(v[0]), float(v[1]), float(v[2])) for c, v in data["scores"].items()},
            needs_play=frozenset((int(a), int(b)) for a, b in data["needs_play"]),
            full=frozenset((int(a), int(b)) for a, b in data["full"]),
            cycles=tuple(Cycle(int(a), int(b), int(c), ab, bc, ca) for a, b, c, ab, bc, ca in data["cycles"]),
            population={int(c): (float(v[0]), float(v[1])) for c, v in data["population"].items()},
        )


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


def _cache_key(environment_id: int) -> str:
    return f"tournament_manager:tie-fit:{environment_id}"


def _stamp_key(environment_id: int) -> str:
    return f"tournament_manager:tie-fit-stamp:{environment_id}"


def _pending_key(environment_id: int) -> str:
    return f"tournament_manager:tie-fit-pending:{environment_id}"


def _file(environment_id: int) -> Path:
    return Path(settings.DATA_DIR) / "tournament_manager" / f"tie-fit-{environment_id}.json"


# --- reading (the leaderboard) -------------------------------------------------------------------------

_file_memo: dict[Path, tuple[tuple[int, int], TieFit | None]] = {}


def _read_file(environment_id: int) -> TieFit | None:
    path = _file(environment_id)
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    version = (st.st_mtime_ns, st.st_size)
    memo = _file_memo.get(path)
    if memo is not None and memo[0] == version:
        return memo[1]
    try:
        parsed = TieFit.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring unreadable tie fit %s: %s", path, exc)
        parsed = None
    _file_memo[path] = (version, parsed)
    return parsed


#: environment id -> (the cached fit's ``computed_at``, the fit parsed from the cache).
_cache_memo: dict[int, tuple[str, TieFit | None]] = {}


def _cached_fit(environment_id: int) -> TieFit | None:
    """The fit in the cache, parsed once per process per fit: a small stamp key tells whether the big
    entry changed, so a page reading the fit costs one small cache read, not the fit's transfer and parse."""
    stamp = cache.get(_stamp_key(environment_id))
    memo = _cache_memo.get(environment_id)
    if stamp is not None and memo is not None and memo[0] == stamp:
        return memo[1]
    cached = cache.get(_cache_key(environment_id))
    if cached is None:
        return None
    parsed = TieFit.from_json(cached)
    _cache_memo[environment_id] = (cached["computed_at"], parsed)
    return parsed


def stored_fit(environment_id: int) -> TieFit | None:
    """The latest stored fit of the environment, or None. No database query, no fitting."""
    candidates = [_cached_fit(environment_id), _read_file(environment_id)]
    found = [f for f in candidates if f is not None]
    return max(found, key=lambda f: f.computed_at) if found else None


# --- scheduling ----------------------------------------------------------------------------------------


def request_refresh(environment_id: int, delay: float | None = None) -> bool:
    """Ask for a background refit of the environment (debounced); returns whether a task was sent.

    The first request sends the task with a countdown of ``delay`` (default ``TM_TIE_FIT_DELAY_SECONDS``);
    requests arriving before that task starts are already covered by it and send nothing.
    """
    delay = _setting("TM_TIE_FIT_DELAY_SECONDS", 60.0) if delay is None else delay
    window = max(delay, 1.0) + _setting("TM_TIE_FIT_PENDING_GRACE_SECONDS", 600.0)
    if not cache.add(_pending_key(environment_id), timezone.now().isoformat(), timeout=window):
        return False

    def send() -> None:
        from core.celery import app

        app.send_task(TASK_NAME, args=[environment_id], countdown=delay)

    transaction.on_commit(send)
    return True


def is_stale(environment_id: int) -> bool:
    """Whether the stored fit misses ratings made since it was computed (one query)."""
    latest = Duel.objects.filter(environment_id=environment_id, rated=True).aggregate(m=Max("rated_at"))["m"]
    current = stored_fit(environment_id)
    if current is None:
        return latest is not None
    return latest is not None and (current.rated_until is None or latest > current.rated_until)


# --- computing (background only) -----------------------------------------------------------------------


def pair_counts(environment_id: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The environment's rated results as pair counts: one row per pair, read from ``PairRecord``.

    The record path keeps those rows current (``core.actions.pair_records``), so this reads one row per
    pair of competitors, never one per match. Returns ``(competitor ids, pairs, table)`` in the shape
    :func:`~tournament_manager.bradley_terry.fit_pair_counts` takes: ``pairs[k] = (low, high)`` indices
    into the ids, ``table[k]`` the low competitor's losses, draws and wins against the high one. A
    player's own error is its loss; OTHER_ERROR counts for nothing.
    """
    rows = (
        PairRecord.objects.filter(environment_id=environment_id, rated=True)
        .annotate(
            losses=F("high_wins") + F("low_errors"),
            wins=F("low_wins") + F("high_errors"),
        )
        .exclude(losses=0, draws=0, wins=0)
        .values_list("low_id", "high_id", "losses", "draws", "wins")
    )
    return _as_arrays(list(rows))


def pair_counts_from_matches(environment_id: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """The same counts aggregated from every rated match (one ``GROUP BY`` over the Match rows).

    Seconds at a million matches: kept to check :func:`pair_counts` against the matches themselves
    (tests, ``benchmarks/bench_web.py``), never on the rating path.
    """
    c1, c2 = "duel__revision_1__competitor_id", "duel__revision_2__competitor_id"
    first_is_low = Q(**{f"{c1}__lt": F(c2)})
    first_wins, second_wins = Q(result__in=_P1_WINS), Q(result__in=_P2_WINS)
    rows = (
        Match.objects.filter(
            duel__environment_id=environment_id,
            duel__state=Duel.State.FINISHED,
            duel__kind__in=RATED_KINDS,
            result__in=(*_P1_WINS, *_P2_WINS, R.DRAW),
        )
        .exclude(**{c1: F(c2)})
        .annotate(low=Least(c1, c2), high=Greatest(c1, c2))
        .values("low", "high")
        .annotate(
            wins=Count("pk", filter=(first_is_low & first_wins) | (~first_is_low & second_wins)),
            draws=Count("pk", filter=Q(result=R.DRAW)),
            losses=Count("pk", filter=(first_is_low & second_wins) | (~first_is_low & first_wins)),
        )
        .order_by()
        .values_list("low", "high", "losses", "draws", "wins")
    )
    return _as_arrays(list(rows))


def _as_arrays(rows: list[tuple[int, int, int, int, int]]) -> tuple[list[int], np.ndarray, np.ndarray]:
    data = np.array(sorted(rows), dtype=np.int64).reshape(-1, 5)
    ids, index = np.unique(data[:, :2], return_inverse=True)
    return [int(c) for c in ids], index.reshape(-1, 2), data[:, 2:].astype(np.float64)


def compute(environment_id: int) -> TieFit:
    """Fit the environment's rated matches now (seconds for a million matches; never call it on a request)."""
    rated_until = Duel.objects.filter(environment_id=environment_id, rated=True).aggregate(m=Max("rated_at"))[
        "m"
    ]
    ids, pairs, table = pair_counts(environment_id)
    return fit_table(ids, pairs, table, rated_until, environment_id)


def tie_margin() -> float:
    """``TM_TIE_MARGIN``: two competitors whose strengths surely differ by less are settled as tied."""
    return _setting("TM_TIE_MARGIN", TIE_MARGIN)


def fit_table(
    ids: list[Any], pairs: np.ndarray, table: np.ndarray, rated_until: datetime | None = None, seed: int = 0
) -> TieFit:
    """The leaderboard's fit of a pair table (:func:`tournament_manager.settled.fit_table`: every pair
    that played weighted the same, bootstrap intervals, settled pairs) with the settings' bootstrap size
    and tie margin."""
    bootstrap = int(_setting("TM_TIE_FIT_BOOTSTRAP", 100))
    fit = settled_fit(
        ids,
        pairs,
        table,
        seed=seed,
        bootstrap=bootstrap,
        margin=tie_margin(),
        pair_matches=int(_setting("TM_PAIR_MATCHES", PAIR_MATCHES)),
        near=int(_setting("TM_NEIGHBOURS", NEAR)),
        open_matches=int(_setting("TM_OPEN_PAIR_MATCHES", OPEN_PAIR_MATCHES)),
    )
    return TieFit(
        fit.intervals,
        rated_until,
        timezone.now(),
        fit.n_results,
        fit.method,
        fit.settled,
        fit.margin,
        fit.checked_all,
        fit.scores,
        fit.needs_play,
        fit.full,
        tuple(significant_cycles(ids, pairs, table)),
        nash_population(ids, pairs, table) if len(ids) <= POPULATION_MAX else {},
    )


def store(environment_id: int, tie_fit: TieFit) -> None:
    """Store ``tie_fit`` (cache without expiry + file) and mark the environment's ratings as updated."""
    data = tie_fit.to_json()
    cache.set(_cache_key(environment_id), data, timeout=None)
    cache.set(_stamp_key(environment_id), data["computed_at"], timeout=None)
    path = _file(environment_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    mark_ratings_updated(environment_id)


def refresh(environment_id: int) -> TieFit:
    """Recompute and store the environment's fit (the ``refresh_tie_fit`` task's body)."""
    # Clear the debounce first: a rating made from now on requests a new fit, which this one may miss.
    cache.delete(_pending_key(environment_id))
    started = timezone.now()
    tie_fit = compute(environment_id)
    store(environment_id, tie_fit)
    log.info(
        "tie fit of environment %s: %d competitors, %d results, %s intervals, %.2f s",
        environment_id,
        len(tie_fit.intervals),
        tie_fit.n_results,
        tie_fit.method,
        (timezone.now() - started).total_seconds(),
    )
    return tie_fit
