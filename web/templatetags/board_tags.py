"""Boards drawn by each game's renderer (``web/game_boards.py``): ``{{ slug|has_sample_board }}`` for a
card's placeholder, ``{% sample_board_scripts environments latest %}`` for the positions (the latest duel's
from ``latest``, the view's ``game_boards.latest_boards``, else the sample) and the scripts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template

from web.game_boards import boards, sample_position

register = template.Library()


@register.filter
def has_sample_board(slug: str) -> bool:
    return sample_position(slug) is not None


@register.inclusion_tag("web/partials/sample_boards.html")
def sample_board_scripts(environments: Iterable[Any] | Any, latest: dict | None = None) -> dict[str, Any]:
    """The positions as JSON, each game's renderer and ``boards.js`` for the given environment rows (or
    one row); no query."""
    if hasattr(environments, "slug"):
        environments = [environments]
    drawn = boards([env.slug for env in environments], latest)
    return {"boards": drawn, "renderers": [f"games/{slug}/renderer.js" for slug in drawn]}
