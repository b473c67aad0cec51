"""Sample boards drawn by each game's renderer (``web/game_boards.py``): ``{{ slug|has_sample_board }}``
for a card's placeholder, ``{% sample_board_scripts slugs %}`` for the positions and the scripts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template

from web.game_boards import sample_boards, sample_position

register = template.Library()


@register.filter
def has_sample_board(slug: str) -> bool:
    return sample_position(slug) is not None


@register.inclusion_tag("web/partials/sample_boards.html")
def sample_board_scripts(environments: Iterable[Any] | Any) -> dict[str, Any]:
    """The positions as JSON, each game's renderer and ``boards.js`` for the given environment rows (or
    one row); no query."""
    if hasattr(environments, "slug"):
        environments = [environments]
    boards = sample_boards([env.slug for env in environments])
    return {"boards": boards, "renderers": [f"games/{slug}/renderer.js" for slug in boards]}
