"""Seasons (Django): freeze at the end, seed the finals from the ladder, play rounds with cuts, archive.

Driven by the periodic task ``tournament_manager.check_seasons`` (:mod:`tournament_manager.season_tasks`);
every step locks the season row and re-checks, so a repeated or concurrent check changes nothing.

- ``start_finals``: once ``ends_at`` has passed, the top ``season.finalists`` playable competitors of the
  ladder (:func:`tournament_manager.leaderboard.leaderboard` order, paused ones skipped) become finalists,
  each with the revision that was current at the end (its newest ELIGIBLE revision that passed its smoke
  test by then) and its ladder rating re-seeded (same mean, initial sigma). Submissions to the game are
  refused from ``ends_at`` until the season is FINISHED (``core.actions.seasons.frozen_season``).
- Each round is an edition-style round robin (:func:`tournament_manager.editions.round_robin_pairs`)
  of ``FINALS`` duels (scheduled with ``core.actions.schedule_duel``, ahead of ladder duels), rated
  match by match with the ladder's rules (:func:`tournament_manager.ladder.apply_duel`) into the
  finals ratings only: finals duels never move the ladder.
- ``advance_finals``: when no duel of the round is queued or running, the finals ratings are recomputed
  from the seeds over every finals duel, the bottom of the round is cut (:class:`FinalsRules`), and the
  next round starts, or the final table is stored and the season is FINISHED.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.actions import ActionError, schedule_duel
from core.actions.seasons import notify_season_finished
from core.models import Competitor, Duel, Match, Revision, Season, SeasonFinalist, SeasonFinalsDuel
from tournament_manager.actions import get_environment_rater
from tournament_manager.editions import round_robin_pairs
from tournament_manager.finals import FinalistLine, FinalsRules, final_table, order_by_rating
from tournament_manager.ladder import DuelRecord, RatingState, apply_duel
from tournament_manager.leaderboard import leaderboard
from tournament_manager.rating import Skill

log = logging.getLogger(__name__)

#: Finals duels run before ladder and edition duels (``Duel.priority``).
FINALS_PRIORITY = 10
_ACTIVE_DUEL = (Duel.State.QUEUED, Duel.State.RUNNING)


def finals_rules() -> FinalsRules:
    """The operator's rules: ``SEASON_FINALS_CUT`` and ``SEASON_FINALS_LAST``."""
    return FinalsRules(
        cut=float(getattr(settings, "SEASON_FINALS_CUT", 0.5)),
        last=int(getattr(settings, "SEASON_FINALS_LAST", 4)),
    )


def revision_at_end(competitor: Competitor, ends_at: datetime) -> Revision | None:
    """The competitor's current revision at ``ends_at``: its newest ELIGIBLE revision tested by then."""
    return (
        Revision.objects.filter(competitor=competitor, state=Revision.State.ELIGIBLE)
        .annotate(ready_at=Coalesce("tested_at", "created_at"))
        .filter(ready_at__lte=ends_at)
        .order_by("-version")
        .first()
    )


def start_finals(season_id: int, now: datetime | None = None) -> Season:
    """Seed the finals of a season whose end has passed and schedule round 1 (no-op otherwise)."""
    now = now or timezone.now()
    with transaction.atomic():
        season = Season.objects.select_for_update().get(pk=season_id)
        if season.state != Season.State.OPEN or season.ends_at > now:
            return season
        rater = get_environment_rater()
        competitors = {
            c.pk: c
            for c in Competitor.objects.filter(
                environment_id=season.environment_id, status=Competitor.Status.ACTIVE
            )
        }
        finalists: list[SeasonFinalist] = []
        for row in leaderboard(season.environment_id):
            competitor = competitors.get(row.competitor_id)
            if competitor is None or len(finalists) >= season.finalists:
                continue
            revision = revision_at_end(competitor, season.ends_at)
            if revision is None:
                continue
            seeded = rater.reset_uncertainty(Skill(row.mu, row.sigma))
            finalists.append(
                SeasonFinalist(
                    season=season,
                    competitor=competitor,
                    revision=revision,
                    seed=len(finalists) + 1,
                    ladder_mu=row.mu,
                    ladder_sigma=row.sigma,
                    mu=seeded.mu,
                    sigma=seeded.sigma,
                )
            )
        SeasonFinalist.objects.bulk_create(finalists)
        season.state = Season.State.FINALS
        season.finals_started_at = now
        season.save(update_fields=["state", "finals_started_at"])
        if len(finalists) < 2:
            _finish(season, finalists, now)
        else:
            _start_round(season, 1, finalists)
    return season


def _start_round(season: Season, number: int, playing: list[SeasonFinalist]) -> None:
    """Schedule round ``number``: a FINALS duel per pair of ``playing`` (in the caller's transaction)."""
    season.finals_round = number
    season.save(update_fields=["finals_round"])
    revision_of = {f.pk: f.revision_id for f in playing}
    for a, b in round_robin_pairs(sorted(revision_of)):
        try:
            duel = schedule_duel(
                revision_of[a], revision_of[b], kind=Duel.Kind.FINALS, priority=FINALS_PRIORITY
            )
        except ActionError as exc:  # a finalist's revision was rejected since: the pair is not played
            log.warning("season %s round %s: %s", season.pk, number, exc)
            continue
        SeasonFinalsDuel.objects.create(season=season, round=number, duel=duel)


def _finals_records(season: Season) -> list[DuelRecord]:
    """The season's finished finals duels, in play order (round, then duel id), with their match results."""
    duels = list(
        Duel.objects.filter(season_finals__season=season, state=Duel.State.FINISHED)
        .order_by("season_finals__round", "pk")
        .values("pk", "finished_at", "revision_1_id", "revision_2_id")
    )
    results: dict[int, list[str]] = {d["pk"]: [] for d in duels}
    for duel_id, result in (
        Match.objects.filter(duel_id__in=list(results))
        .order_by("duel_id", "index")
        .values_list("duel_id", "result")
    ):
        results[duel_id].append(result)
    return [
        DuelRecord(
            duel_id=d["pk"],
            competitor_1=d["revision_1_id"],
            revision_1=d["revision_1_id"],
            competitor_2=d["revision_2_id"],
            revision_2=d["revision_2_id"],
            finished_at=d["finished_at"],
            match_results=tuple(results[d["pk"]]),
        )
        for d in duels
    ]


def _rate_finals(season: Season, finalists: Iterable[SeasonFinalist]) -> None:
    """Recompute every finalist's finals rating and counts from its seed over all finished finals duels."""
    rater = get_environment_rater()
    by_revision = {f.revision_id: f for f in finalists}
    states = {
        f.revision_id: RatingState(
            rater.reset_uncertainty(Skill(f.ladder_mu, f.ladder_sigma)), revision=f.revision_id
        )
        for f in by_revision.values()
    }
    for record in _finals_records(season):
        apply_duel(states, record, rater)
    for revision_id, f in by_revision.items():
        s = states[revision_id]
        f.mu, f.sigma = s.skill.mu, s.skill.sigma
        f.matches, f.wins, f.draws, f.losses, f.errors = s.matches, s.wins, s.draws, s.losses, s.errors


def _line(f: SeasonFinalist) -> FinalistLine:
    return FinalistLine(f.pk, f.seed, f.mu, f.sigma, f.cut_after_round)


def _finish(season: Season, finalists: list[SeasonFinalist], now: datetime) -> None:
    """Store the final table (ranks 1..n), archive the season and tell the finalists' owners."""
    by_id = {f.pk: f for f in finalists}
    for rank, line in enumerate(final_table([_line(f) for f in finalists]), start=1):
        by_id[line.id].final_rank = rank
    SeasonFinalist.objects.bulk_update(finalists, ["final_rank"])
    season.state = Season.State.FINISHED
    season.finished_at = now
    season.save(update_fields=["state", "finished_at"])
    notify_season_finished(season)


_RATED_FIELDS = ["mu", "sigma", "matches", "wins", "draws", "losses", "errors", "cut_after_round"]


def advance_finals(season_id: int, now: datetime | None = None) -> Season:
    """Close the current round once none of its duels is queued or running: rate, cut, and start the next
    round or archive the season. A no-op while the round is still being played."""
    now = now or timezone.now()
    with transaction.atomic():
        season = Season.objects.select_for_update().get(pk=season_id)
        if season.state != Season.State.FINALS:
            return season
        running = Duel.objects.filter(
            season_finals__season=season, season_finals__round=season.finals_round, state__in=_ACTIVE_DUEL
        )
        if running.exists():
            return season
        finalists = list(season.finalist_rows.all())
        _rate_finals(season, finalists)
        playing = [f for f in finalists if f.cut_after_round is None]
        ordered = order_by_rating([_line(f) for f in playing])
        kept = finals_rules().kept_after(len(playing))
        by_id = {f.pk: f for f in playing}
        for line in ordered[kept:] if kept else []:
            by_id[line.id].cut_after_round = season.finals_round
        SeasonFinalist.objects.bulk_update(finalists, _RATED_FIELDS)
        if kept:
            _start_round(season, season.finals_round + 1, [by_id[line.id] for line in ordered[:kept]])
        else:
            _finish(season, finalists, now)
    return season


def check_seasons(now: datetime | None = None) -> int:
    """Start the finals of every season that has ended and advance every season in its finals; returns
    how many seasons changed state or round."""
    now = now or timezone.now()
    changed = 0
    for season_id in Season.objects.filter(state=Season.State.OPEN, ends_at__lte=now).values_list(
        "pk", flat=True
    ):
        changed += start_finals(season_id, now).state != Season.State.OPEN
    finals = Season.objects.filter(state=Season.State.FINALS).values_list("pk", "finals_round")
    for season_id, round_before in list(finals):
        season = advance_finals(season_id, now)
        changed += season.state != Season.State.FINALS or season.finals_round != round_before
    return changed


def finals_duel_counts(season: Season) -> dict[int, dict[str, int]]:
    """Per round: duels ``total`` and ``done`` (finished or failed), for the season page."""
    counts: dict[int, dict[str, int]] = {}
    for rnd, state in season.finals_duels.values_list("round", "duel__state"):
        c = counts.setdefault(rnd, {"total": 0, "done": 0})
        c["total"] += 1
        c["done"] += state not in _ACTIVE_DUEL
    return dict(sorted(counts.items()))


__all__ = ["advance_finals", "check_seasons", "finals_rules", "revision_at_end", "start_finals"]
