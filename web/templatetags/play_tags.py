"""The "Play" and "Challenge" panel of a competitor's page (``{% play_panel competitor %}``)."""

from __future__ import annotations

from typing import Any

from django import template

from core.actions.challenge import challenges_in_last_day, challenges_per_day
from core.actions.play import can_play_against
from core.models import Competitor

register = template.Library()


@register.inclusion_tag("web/play/panel.html", takes_context=True)
def play_panel(context: dict[str, Any], competitor: Competitor) -> dict[str, Any]:
    """Buttons to play against ``competitor`` and to challenge it with one of the viewer's competitors
    (two queries, only for a signed-in viewer allowed to play it)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    playable = competitor.current_revision_id is not None
    allowed = user is not None and can_play_against(user, competitor)
    own: list[Competitor] = []
    used = 0
    if allowed and playable:
        own = list(
            Competitor.objects.filter(
                owner=user, environment_id=competitor.environment_id, current_revision__isnull=False
            ).order_by("name")
        )
        used = challenges_in_last_day(user)
    return {
        "competitor": competitor,
        "signed_in": bool(user and user.is_authenticated),
        "allowed": allowed,
        "playable": playable,
        "own_competitors": own,
        "challenges_left": max(0, challenges_per_day() - used),
        "challenges_per_day": challenges_per_day(),
        "csrf_token": context.get("csrf_token"),
    }
