"""``{% season_results competitor %}``: a competitor's results in finished seasons (competitor page)."""

from __future__ import annotations

from typing import Any

from django import template

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
