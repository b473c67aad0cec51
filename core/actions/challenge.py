"""Challenges: a person pits one of their own competitors against another one in an unrated duel.

A challenge is a ``Duel`` of kind ``CHALLENGE`` between the two competitors' playing (ELIGIBLE) revisions;
the rating ignores that kind (``tournament_manager.actions.RATED_KINDS``). Each person may issue
``CHALLENGES_PER_DAY`` of them in any 24 hours (counted from the database, so every web process agrees).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.actions.duels import schedule_duel
from core.actions.errors import ActionError
from core.actions.play import can_play_against, play_setting
from core.models import Competitor, Duel, Revision, User


class ChallengeLimitError(ActionError):
    """The person used up their challenges for the last 24 hours."""


def challenges_per_day() -> int:
    """How many challenges one person may issue in any 24 hours (``CHALLENGES_PER_DAY``, default 5)."""
    return int(play_setting("CHALLENGES_PER_DAY", 5))


def challenges_in_last_day(user: Any) -> int:
    """Challenges ``user`` issued in the last 24 hours (duels of kind CHALLENGE led by their competitors)."""
    since = timezone.now() - timedelta(days=1)
    return Duel.objects.filter(
        kind=Duel.Kind.CHALLENGE, revision_1__competitor__owner=user, created_at__gte=since
    ).count()


def _playing_revision(competitor: Competitor) -> Revision:
    revision = competitor.current_revision
    if revision is None or revision.state != Revision.State.ELIGIBLE or not revision.agent_ref:
        raise ActionError(f"{competitor.name} has no playable revision yet.")
    return revision


def issue_challenge(user: Any, challenger_id: int, opponent_id: int) -> Duel:
    """Queue an unrated duel: ``user``'s competitor ``challenger_id`` (player 1) against ``opponent_id``
    (public, or also the user's). Raises ``ActionError`` / ``ChallengeLimitError`` with a reason."""
    if not getattr(user, "is_authenticated", False):
        raise ActionError("Sign in to challenge a competitor.")
    comps = {
        c.pk: c
        for c in Competitor.objects.select_related("current_revision").filter(
            pk__in=[challenger_id, opponent_id]
        )
    }
    challenger, opponent = comps.get(challenger_id), comps.get(opponent_id)
    if challenger is None or challenger.owner_id != user.pk:
        raise ActionError("Challenge with one of your own competitors.")
    if opponent is None or not can_play_against(user, opponent):
        raise ActionError("No such competitor to challenge.")
    if challenger.environment_id != opponent.environment_id:
        raise ActionError("The two competitors play different games.")
    r1, r2 = _playing_revision(challenger), _playing_revision(opponent)
    limit = challenges_per_day()
    with transaction.atomic():
        # Serialise one person's challenges so two simultaneous requests cannot both take the last one.
        User.objects.select_for_update().filter(pk=user.pk).first()
        if challenges_in_last_day(user) >= limit:
            raise ChallengeLimitError(f"You can issue {limit} challenges a day; try again tomorrow.")
        return schedule_duel(r1, r2, kind=Duel.Kind.CHALLENGE, priority=1)
