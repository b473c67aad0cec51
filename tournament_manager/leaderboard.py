"""The leaderboard of an environment: ranked by the Bradley-Terry fit's expected score against the field.

What a rank estimates (``docs/RATINGS.md``): each competitor's expected score (win 1, draw 1/2) against an
opponent drawn uniformly from the field, under a Bradley-Terry model fitted to every stored rated result
with every pair that played weighted the same (:mod:`tournament_manager.settled`): the round robin's
standings in a transitive game, whatever pairs the ladder chose to play. Rows the stored fit has seen are
ordered by it; two rows share a rank (a statistical tie, "=") unless the fit's bootstrap interval of
their strength difference excludes 0 (comparing each row with its tie group's leader). Competitors the
fit has not seen yet (rated since, or never) follow, by TrueSkill's ``mu - 3 sigma``, each on its own
rank. TrueSkill still drives matchmaking and is shown beside.

Building the leaderboard never fits anything: it reads the latest stored fit (possibly a little older
than the ratings), and when no fit exists at all it orders by ``mu - 3 sigma`` and requests one.

A ratings version costs only what changed. Each process keeps a snapshot of the ranking per environment
(:func:`leaderboard`) and, when the ratings change, reads only the rows whose ``updated_at`` is later than
the snapshot's: rating rounds run under the environment's row lock and stamp the rows they change with a
stamp later than every earlier one (``tournament_manager.actions``), so stamps follow commit order and
nothing committed is ever missed. The fit's part of the order (and its ranks) changes only with the fit;
the rows it has not seen are re-sorted among themselves. A new fit, a vanished row or a large change
rebuild the snapshot from one query (:func:`build_leaderboard`).

What a row shows without being a rating (the competitor's name, its owner's name, its playing version, a
pause) changes without a stamp. Once per :data:`DETAILS_SECONDS` window the snapshot reads those columns
alone for every row (one query, :data:`_DETAILS`) and replaces only the rows whose columns differ: the
order and the ranks never depend on them, so nothing is re-sorted and the other rows stay the same objects
(the API serializes again only the replaced ones). No stamp is needed, so no write path has to keep one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime

from django.conf import settings
from django.db.models import Count, Max

from core.models import Competitor, Environment, Rating
from core.models.user import default_public_name
from tournament_manager.ids import Id
from tournament_manager.settled import rank_by_fit
from tournament_manager.tie_fit import TieFit, request_refresh, stored_fit


@dataclass(frozen=True)
class LeaderboardRow:
    """One line of the leaderboard."""

    rank: int
    competitor_id: int
    competitor: str
    owner: str
    version: int | None
    is_paused: bool
    mu: float
    sigma: float
    skill: float
    matches: int
    wins: int
    draws: int
    losses: int
    errors: int
    last_played_at: datetime | None
    bt_strength: float | None
    bt_lower: float | None
    bt_upper: float | None
    #: The rating is still uncertain (``sigma`` above ``TM_PROVISIONAL_SIGMA``): its place may change.
    provisional: bool = False
    #: Expected score against the whole field (what the rank estimates) and its 95 % interval; None when
    #: the stored fit has not seen the competitor.
    field_score: float | None = None
    field_score_lower: float | None = None
    field_score_upper: float | None = None


#: Default of ``TM_PROVISIONAL_SIGMA``: a rating is provisional while its sigma is above this (TrueSkill
#: units; its 95 % interval is then wider than about one beta, the skill gap of a 76 % win chance).
PROVISIONAL_SIGMA = 2.0


def provisional_threshold() -> float:
    """The sigma above which a rating is shown as provisional (``TM_PROVISIONAL_SIGMA``)."""
    return float(getattr(settings, "TM_PROVISIONAL_SIGMA", PROVISIONAL_SIGMA))


def bradley_terry_intervals(environment_id: int) -> dict[Id, tuple[float, float, float]]:
    """competitor id -> (strength, lower, upper) from the stored background fit; {} when there is none yet."""
    stored = stored_fit(environment_id)
    return dict(stored.intervals) if stored is not None else {}


#: Columns one leaderboard row is built from (one query, no model instances).
_COLUMNS = (
    "competitor_id",
    "mu",
    "sigma",
    "skill",
    "matches",
    "wins",
    "draws",
    "losses",
    "errors",
    "last_played_at",
    "updated_at",
    "competitor__name",
    "competitor__status",
    "competitor__owner_id",
    "competitor__owner__display_name",
    "competitor__owner__github",
    "competitor__current_revision__version",
)
#: What a row shows that is not a rating (:func:`_details_key` of these columns, in this order).
_DETAILS = (
    "competitor_id",
    "competitor__name",
    "competitor__status",
    "competitor__owner_id",
    "competitor__owner__display_name",
    "competitor__owner__github",
    "competitor__current_revision__version",
)
#: The snapshot re-reads the :data:`_DETAILS` columns once per wall-clock window of this many seconds, so
#: that what changes without touching the ratings (a competitor's name, its owner's name, its version, a
#: pause) shows within this many seconds. 0: on every call (tests).
DETAILS_SECONDS = 60.0
#: A delta larger than this share of the rows (and than ``_REBUILD_MIN`` rows) rebuilds the snapshot instead.
_REBUILD_SHARE = 0.25
_REBUILD_MIN = 64


def _unfitted_key(row: LeaderboardRow) -> tuple[float, float, int]:
    return (-row.skill, -row.mu, row.competitor_id)


def _details_window() -> int:
    """The wall clock's current window of :data:`DETAILS_SECONDS`: the snapshot re-reads the details in the
    first call of each window, so what was committed before a window began shows in that window's pages
    (the game page caches its fragment per minute)."""
    return int(time.time() // DETAILS_SECONDS) if DETAILS_SECONDS > 0 else time.monotonic_ns()


def _details_key(values: dict) -> tuple:
    """The :data:`_DETAILS` columns of ``values`` (a row of :data:`_COLUMNS`): the tuple the refresh reads."""
    return tuple(values[c] for c in _DETAILS)


def _owner_name(owner_id: int | None, display_name: str, github: str) -> str:
    return display_name or github or default_public_name(owner_id or 0)


def _row(values: dict, rank: int, fit: TieFit | None, provisional_sigma: float) -> LeaderboardRow:
    cid = values["competitor_id"]
    bt = fit.intervals.get(cid) if fit is not None else None
    score = fit.scores.get(cid) if fit is not None else None
    return LeaderboardRow(
        rank=rank,
        competitor_id=cid,
        competitor=values["competitor__name"],
        owner=_owner_name(
            values["competitor__owner_id"],
            values["competitor__owner__display_name"],
            values["competitor__owner__github"],
        ),
        version=values["competitor__current_revision__version"],
        is_paused=values["competitor__status"] != Competitor.Status.ACTIVE,
        mu=values["mu"],
        sigma=values["sigma"],
        skill=values["skill"],
        matches=values["matches"],
        wins=values["wins"],
        draws=values["draws"],
        losses=values["losses"],
        errors=values["errors"],
        last_played_at=values["last_played_at"],
        bt_strength=bt[0] if bt else None,
        bt_lower=bt[1] if bt else None,
        bt_upper=bt[2] if bt else None,
        provisional=values["sigma"] > provisional_sigma,
        field_score=score[0] if score else None,
        field_score_lower=score[1] if score else None,
        field_score_upper=score[2] if score else None,
    )


@dataclass
class _Snapshot:
    """One process's ranking of one environment, and what it reflects."""

    fit_computed_at: datetime | None
    #: The latest ``Rating.updated_at`` reflected (None: no rating row yet).
    stamp: datetime | None
    #: The :func:`_details_window` in which the :data:`_DETAILS` columns were last read for every row.
    details_at: int
    #: The rows the fit has seen, in the fit's order (their ranks fixed by the fit), then the others.
    fitted: list[LeaderboardRow]
    unfitted: list[LeaderboardRow]
    #: competitor id -> index in ``fitted``.
    fitted_index: dict[int, int]
    #: competitor id -> the :data:`_DETAILS` columns its row was made from (the id first).
    details: dict[int, tuple]
    #: The details window in which this process last saw those columns change without a rating (0: never;
    #: :func:`details_version`).
    details_changed_in: int = 0

    @property
    def rows(self) -> list[LeaderboardRow]:
        return self.fitted + self.unfitted


_snapshots: dict[int, _Snapshot] = {}
_locks: dict[int, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(environment_id: int) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(environment_id, threading.Lock())


def _rank_unfitted(snapshot_fitted: int, rows: list[LeaderboardRow]) -> list[LeaderboardRow]:
    rows.sort(key=_unfitted_key)
    return [r if r.rank == k else replace(r, rank=k) for k, r in enumerate(rows, start=snapshot_fitted + 1)]


def _build(environment_id: int, fit: TieFit | None) -> _Snapshot:
    values = list(Rating.objects.filter(environment_id=environment_id).values(*_COLUMNS))
    if fit is None and any(v["matches"] for v in values):
        request_refresh(environment_id)  # debounced: one background fit, however many requests ask
    intervals = fit.intervals if fit is not None else {}
    in_fit = [v for v in values if v["competitor_id"] in intervals]
    # The fit's order: strength, then id (never the ratings, so that it changes only with the fit).
    in_fit.sort(key=lambda v: (-intervals[v["competitor_id"]][0], v["competitor_id"]))
    ranks = rank_by_fit([v["competitor_id"] for v in in_fit], fit.knows_order) if fit is not None else {}
    provisional_sigma = provisional_threshold()
    fitted = [_row(v, ranks[v["competitor_id"]], fit, provisional_sigma) for v in in_fit]
    unfitted = [_row(v, 0, fit, provisional_sigma) for v in values if v["competitor_id"] not in intervals]
    stamp = max((v["updated_at"] for v in values), default=None)
    return _Snapshot(
        fit_computed_at=fit.computed_at if fit is not None else None,
        stamp=stamp,
        details_at=_details_window(),
        fitted=fitted,
        unfitted=_rank_unfitted(len(fitted), unfitted),
        fitted_index={r.competitor_id: k for k, r in enumerate(fitted)},
        details={v["competitor_id"]: _details_key(v) for v in values},
    )


def _patched(snapshot: _Snapshot, environment_id: int, fit: TieFit | None, count: int) -> _Snapshot | None:
    """``snapshot`` with the rows changed since its stamp, or None when a rebuild is due instead."""
    changed = Rating.objects.filter(environment_id=environment_id)
    if snapshot.stamp is not None:
        changed = changed.filter(updated_at__gt=snapshot.stamp)
    most = max(_REBUILD_MIN, int(count * _REBUILD_SHARE))
    values = list(changed.values(*_COLUMNS)[: most + 1])
    if len(values) > most:
        return None
    provisional_sigma = provisional_threshold()
    fitted = list(snapshot.fitted)
    unfitted = {r.competitor_id: r for r in snapshot.unfitted}
    for v in values:
        at = snapshot.fitted_index.get(v["competitor_id"])
        if at is not None:
            fitted[at] = _row(v, fitted[at].rank, fit, provisional_sigma)
        else:
            unfitted[v["competitor_id"]] = _row(v, 0, fit, provisional_sigma)
    if len(fitted) + len(unfitted) != count:  # a row vanished (a competitor deleted): rebuild
        return None
    details = snapshot.details
    if values:
        details = dict(details)
        details.update((v["competitor_id"], _details_key(v)) for v in values)
    stamps = [snapshot.stamp] if snapshot.stamp is not None else []
    return _Snapshot(
        fit_computed_at=snapshot.fit_computed_at,
        stamp=max(stamps + [v["updated_at"] for v in values], default=None),
        details_at=snapshot.details_at,
        fitted=fitted,
        unfitted=_rank_unfitted(len(fitted), list(unfitted.values())) if values else snapshot.unfitted,
        fitted_index=snapshot.fitted_index,
        details=details,
        details_changed_in=snapshot.details_changed_in,
    )


def _with_details(snapshot: _Snapshot, environment_id: int) -> _Snapshot:
    """``snapshot`` with what its rows show re-read (the :data:`_DETAILS` columns only, one query): the rows
    whose columns changed are replaced, in place in the order (which never depends on them); the others
    stay the same objects. Rows the snapshot does not have yet are left to the ratings' stamps, and rows
    it has that vanished to the row count (:func:`leaderboard` checks both)."""
    read = Rating.objects.filter(environment_id=environment_id).values_list(*_DETAILS)
    known = snapshot.details
    changed = {d[0]: d for d in read if d[0] in known and known[d[0]] != d}
    if not changed:
        return replace(snapshot, details_at=_details_window())
    details = dict(known)
    fitted = list(snapshot.fitted)
    unfitted = list(snapshot.unfitted)
    for rows, index in ((fitted, snapshot.fitted_index), (unfitted, None)):
        places = index if index is not None else {r.competitor_id: k for k, r in enumerate(rows)}
        for cid, d in changed.items():
            at = places.get(cid)
            if at is None:
                continue
            _, name, status, owner_id, display_name, github, version = d
            details[cid] = d
            rows[at] = replace(
                rows[at],
                competitor=name,
                owner=_owner_name(owner_id, display_name, github),
                version=version,
                is_paused=status != Competitor.Status.ACTIVE,
            )
    window = _details_window()
    return replace(
        snapshot,
        details_at=window,
        fitted=fitted,
        unfitted=unfitted,
        details=details,
        details_changed_in=window,
    )


def build_leaderboard(environment_id: int) -> list[LeaderboardRow]:
    """Every rated competitor of the environment, best first, built from scratch (one query)."""
    return _build(environment_id, stored_fit(environment_id)).rows


def leaderboard(environment: Environment | int) -> list[LeaderboardRow]:
    """Every rated competitor of ``environment``, best first, with tie-aware ranks: the process's snapshot,
    brought up to date with the rows changed since (one query for the version, one for the changes)."""
    environment_id = environment if isinstance(environment, int) else environment.pk
    with _lock(environment_id):
        head = Rating.objects.filter(environment_id=environment_id).aggregate(
            m=Max("updated_at"), n=Count("pk")
        )
        fit = stored_fit(environment_id)
        fit_at = fit.computed_at if fit is not None else None
        snapshot = _snapshots.get(environment_id)
        fresh: _Snapshot | None = None
        if snapshot is not None and snapshot.fit_computed_at == fit_at:
            same = snapshot.stamp == head["m"] and len(snapshot.fitted) + len(snapshot.unfitted) == head["n"]
            fresh = snapshot if same and snapshot.stamp is not None else None
            if fresh is None:
                fresh = _patched(snapshot, environment_id, fit, head["n"])
            if fresh is not None and fresh.details_at != _details_window():
                fresh = _with_details(fresh, environment_id)
        if fresh is None:
            fresh = _build(environment_id, fit)
            if snapshot is not None:  # what the rebuild shows of the details may have changed too
                changed = fresh.details != snapshot.details
                fresh.details_changed_in = fresh.details_at if changed else snapshot.details_changed_in
        _snapshots[environment_id] = fresh
        return fresh.rows


def details_version(environment_id: int) -> int:
    """What the process's ranking shows of the details (names, owners' names, versions, pauses), as a
    number to add to the ratings' version: the window in which it last saw them change without a rating
    (0: never, or no ranking built yet). Once per :data:`DETAILS_SECONDS` window it brings the snapshot up
    to date first (the ranking's queries); otherwise it reads nothing. Processes see a change in the same
    window or the next (a process started after it has never seen it change), so for up to a window two
    of them may give the same details different numbers, or one number to the details before and after a
    change."""
    snapshot = _snapshots.get(environment_id)
    if snapshot is None:  # nothing shown yet in this process: its first ranking reads every detail
        return 0
    if snapshot.details_at != _details_window():
        leaderboard(environment_id)
        snapshot = _snapshots[environment_id]
    return snapshot.details_changed_in


@dataclass(frozen=True)
class PopulationRow:
    """One agent of the population view: its mass in the Nash mixture and its payoff against it."""

    competitor_id: int
    competitor: str
    mass: float
    payoff: float


@dataclass(frozen=True)
class Intransitivity:
    """What one number per agent hides (:mod:`tournament_manager.intransitivity`), from the stored fit."""

    #: (a, b, c, score a-b, score b-c, score c-a) with names: a beats b beats c beats a, all significant.
    cycles: list[tuple[str, str, str, float, float, float]]
    #: The population view, agents in the Nash mixture first (heaviest first), then by payoff.
    population: list[PopulationRow]
    #: Whether the game's strategies cycle (Goofspiel, Leduc Hold'em): the page shows the population view.
    cyclic_game: bool


def intransitivity(environment: Environment) -> Intransitivity:
    """Significant head-to-head cycles and the Nash population view of the stored fit (one query for
    the names; nothing fitted)."""
    from tournament_manager.intransitivity import CYCLIC_GAMES

    stored = stored_fit(environment.pk)
    cycles = list(stored.cycles) if stored else []
    population = dict(stored.population) if stored else {}
    wanted = {c for cyc in cycles for c in (cyc.a, cyc.b, cyc.c)} | set(population)
    names = dict(Competitor.objects.filter(pk__in=wanted).values_list("pk", "name")) if wanted else {}
    rows = [
        PopulationRow(cid, names.get(cid, f"#{cid}"), mass, payoff)
        for cid, (mass, payoff) in population.items()
    ]
    rows.sort(key=lambda r: (-r.mass, -r.payoff, r.competitor))
    return Intransitivity(
        [
            (
                names.get(c.a, f"#{c.a}"),
                names.get(c.b, f"#{c.b}"),
                names.get(c.c, f"#{c.c}"),
                c.ab,
                c.bc,
                c.ca,
            )
            for c in cycles
        ],
        rows,
        environment.slug in CYCLIC_GAMES,
    )
