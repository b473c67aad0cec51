"""Season pages: a game's seasons, and one season's finals (winner, podium, final table, rounds)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from core.models import Environment, Season, SeasonFinalist
from tournament_manager.seasons import finals_duel_counts

#: Places shown on the podium.
PODIUM = 3


def _environment(slug: str) -> Environment:
    return get_object_or_404(Environment, slug=slug, is_active=True)


@require_GET
def season_list(request: HttpRequest, slug: str) -> HttpResponse:
    """Every season of a game, newest first, with its state and winner."""
    env = _environment(slug)
    seasons = list(Season.objects.filter(environment=env).order_by("-starts_at"))
    winners = {
        f.season_id: f
        for f in SeasonFinalist.objects.filter(season__in=seasons, final_rank=1).select_related(
            "competitor__owner", "revision"
        )
    }
    rows = [{"season": s, "winner": winners.get(s.pk)} for s in seasons]
    return render(request, "web/seasons.html", {"environment": env, "rows": rows})


@require_GET
def season_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """One season: its dates, state, finals rounds and (once FINISHED) winner, podium and final table."""
    env = _environment(slug)
    season = get_object_or_404(Season, pk=pk, environment=env)
    finalists = list(
        season.finalist_rows.select_related("competitor__owner", "revision").order_by("final_rank", "seed")
    )
    finished = season.state == Season.State.FINISHED
    context = {
        "environment": env,
        "season": season,
        "finished": finished,
        "finalists": finalists,
        "podium": [f for f in finalists if f.final_rank and f.final_rank <= PODIUM] if finished else [],
        "rounds": finals_duel_counts(season),
    }
    return render(request, "web/season.html", context)
