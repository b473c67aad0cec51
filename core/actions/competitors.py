"""Pausing and resuming competitors (a paused competitor is left out of matchmaking)."""

from __future__ import annotations

from django.db import transaction

from core.actions.errors import ActionError
from core.actions.notifications import notify_competitor_paused
from core.models import Competitor


def set_competitor_status(competitor_id: int, status: str, reason: str = "") -> Competitor:
    """Set ``Competitor.status`` (ACTIVE or PAUSED) with a reason shown to its owner. Pausing an active
    competitor notifies its owner (once per pause, in the same transaction)."""
    if status not in Competitor.Status.values:
        raise ActionError(f"unknown status {status!r}; use one of {', '.join(Competitor.Status.values)}")
    with transaction.atomic():
        competitor = Competitor.objects.select_for_update().get(pk=competitor_id)
        newly_paused = status == Competitor.Status.PAUSED and competitor.status != status
        competitor.status = status
        competitor.pause_reason = reason if status == Competitor.Status.PAUSED else ""
        competitor.save(update_fields=["status", "pause_reason"])
        if newly_paused:
            notify_competitor_paused(competitor)
    return competitor
