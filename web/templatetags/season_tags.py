"""Season tags: ``{% season_results competitor %}`` (its finished seasons, competitor page) and
``{% season_banner environment %}`` (the running or last season, game page)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils import timezone

from core.models import Season, SeasonFinalist

register = template.Library()


@register.inclusion_tag("web/partials/season_results.html")
def season_results(competitor: Any) -> dict[str, Any]:
    """The competitor's finals of finished seasons, newest first (rank, seed, revision, cut round)."""
    results = (
        SeasonFinalist.objects.filter(competitor=competitor, season__state=Season.State.FINISHED)
        .select_related("season__environment", "revision")
        .order_by("-season__ends_at")
    )
    return {"results": list(results)}


@register.inclusion_tag("web/partials/season_banner.html")
def season_banner(environment: Any) -> dict[str, Any]:
    """The game's season in progress (open, or in its finals with submissions frozen), else its latest
    finished one with the winner; two queries at most."""
    latest = Season.objects.filter(environment=environment).order_by("-starts_at").first()
    winner = None
    if latest is not None and latest.state == Season.State.FINISHED:
        winner = (
            SeasonFinalist.objects.filter(season=latest, final_rank=1).select_related("competitor").first()
        )
    upcoming = latest is not None and latest.starts_at > timezone.now()
    return {"season": latest, "winner": winner, "upcoming": upcoming, "environment": environment}
