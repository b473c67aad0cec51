"""Seasons as the rest of ``core`` sees them: whether a game's submissions are frozen, creating one, and
telling finalists' owners the result.

The finals themselves (seeding, rounds, cuts, the final table) are run by ``tournament_manager.seasons``.
"""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db.models import Q
from django.utils import timezone

from core.actions.errors import ActionError
from core.actions.notifications import notify
from core.models import Environment, Notification, Season, SeasonFinalist


def frozen_season(environment_id: int, now: datetime | None = None) -> Season | None:
    """The season whose end froze this game's submissions, if any: it has ended and is not FINISHED yet
    (its finals are being played, or about to start)."""
    now = now or timezone.now()
    return (
        Season.objects.filter(environment_id=environment_id, ends_at__lte=now)
        .filter(Q(state=Season.State.OPEN) | Q(state=Season.State.FINALS))
        .order_by("ends_at")
        .first()
    )


def create_season(
    environment: Environment | int,
    name: str,
    starts_at: datetime,
    ends_at: datetime,
    finalists: int | None = None,
) -> Season:
    """A new season of ``environment`` (validated: dates in order, no overlap, at least two finalists)."""
    environment_id = environment if isinstance(environment, int) else environment.pk
    season = Season(environment_id=environment_id, name=name, starts_at=starts_at, ends_at=ends_at)
    if finalists is not None:
        season.finalists = finalists
    try:
        season.full_clean()
    except ValidationError as exc:
        raise ActionError("; ".join(exc.messages)) from None
    season.save()
    return season


def notify_season_finished(season: Season) -> int:
    """Tell every finalist's owner that the season's finals ended, with their final ranks (one notification
    per owner; kind TOURNAMENT_FINISHED, key ``season:<id>``). Call inside the archiving transaction.
    Returns how many were created."""
    rows = list(
        SeasonFinalist.objects.filter(season=season)
        .select_related("competitor", "revision")
        .order_by("final_rank", "seed")
    )
    by_owner: dict[int, list[SeasonFinalist]] = {}
    for f in rows:
        by_owner.setdefault(f.competitor.owner_id, []).append(f)
    env = season.environment
    link = f"/games/{env.slug}/seasons/{season.pk}/"
    created = 0
    for owner_id, entries in sorted(by_owner.items()):
        lines = []
        for f in entries:
            where = f"cut after round {f.cut_after_round}" if f.cut_after_round else "played the last round"
            lines.append(
                f"{f.competitor.name} v{f.revision.version}: rank {f.final_rank} of {len(rows)} "
                f"(ladder seed {f.seed}, {where})"
            )
        note = notify(
            owner_id,
            Notification.Kind.TOURNAMENT_FINISHED,
            f"season:{season.pk}",
            f"{env.name} season {season.name}: the finals have ended",
            "\n".join(lines),
            link,
        )
        created += note is not None
    return created
