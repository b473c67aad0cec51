"""Rating rows as the rest of ``core`` changes them (the rater itself is ``tournament_manager.actions``)."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from core.models import Environment, Rating


def mark_ratings_updated(environment_id: int) -> int:
    """Raise every ``Rating.updated_at`` of the environment to now (never lowering one, whatever a
    machine's clock says: rating stamps rely on it), under the environment's row lock, so pages cached per
    ratings version show what changed (the leaderboard's tie fit). Returns how many rows."""
    with transaction.atomic():
        Environment.objects.select_for_update().only("pk").get(pk=environment_id)
        later = Greatest(F("updated_at") + timedelta(microseconds=1), Value(timezone.now()))
        return Rating.objects.filter(environment_id=environment_id).update(updated_at=later)
