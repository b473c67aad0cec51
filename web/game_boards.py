"""A sample position of each game, drawn in the browser by the game's own renderer on its card (home page)
and its page: a state from the game's ``static/sample_states.json`` (one seeded playout), read once per
process, never a database query."""

from __future__ import annotations

import functools
import json
from typing import Any

from environments import UnknownGameError
from environments.registry import static_dir


@functools.cache
def sample_position(slug: str) -> Any:
    """A position two thirds into the game's sample playout (pieces on the board, not yet over), or
    ``None`` when the game ships no sample or no renderer."""
    try:
        folder = static_dir(slug)
        if not (folder / "renderer.js").is_file():
            return None  # nothing to draw it with
        states = json.loads((folder / "sample_states.json").read_text(encoding="utf-8"))
    except (UnknownGameError, OSError, ValueError):
        return None
    if not isinstance(states, list) or not states:
        return None
    return states[(len(states) - 1) * 2 // 3]


def sample_boards(slugs: list[str]) -> dict[str, Any]:
    """``{slug: position}`` for the games that have a sample (the page's JSON for ``boards.js``)."""
    boards = {slug: sample_position(slug) for slug in slugs}
    return {slug: state for slug, state in boards.items() if state is not None}
