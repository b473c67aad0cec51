"""Each game's board on its card (home page) and its page, drawn in the browser by the game's own renderer:
the final position of the latest finished duel's last match when the game has one (:func:`latest_boards`,
one SQL query for all the games), else a position of the game's ``static/sample_states.json`` (one seeded
playout, read once per process, never a database query)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from typing import Any

from django.db.models import OuterRef, Subquery
from django.urls import reverse

from core.match_states import recorded
from environments import UnknownGameError, get_game
from environments.registry import static_dir


def _recorded_states(slug: str, states: list[Any], actions: list[Any]) -> list[Any]:
    """The match's states as the referee recorded them (stored compact: ``core.match_states``)."""
    try:
        return recorded(get_game(slug), states or [], actions)
    except UnknownGameError:
        return states or []


@functools.cache
def has_renderer(slug: str) -> bool:
    try:
        return (static_dir(slug) / "renderer.js").is_file()
    except UnknownGameError:
        return False


@functools.cache
def sample_position(slug: str) -> Any:
    """A position two thirds into the game's sample playout (pieces on the board, not yet over), or
    ``None`` when the game ships no sample or no renderer."""
    if not has_renderer(slug):
        return None  # nothing to draw it with
    try:
        states = json.loads((static_dir(slug) / "sample_states.json").read_text(encoding="utf-8"))
    except (UnknownGameError, OSError, ValueError):
        return None
    if not isinstance(states, list) or not states:
        return None
    return states[(len(states) - 1) * 2 // 3]


def _sample(state: Any) -> dict[str, Any]:
    return {"state": state, "players": ["Player 1", "Player 2"], "first_player": "PLAYER_1", "sample": True}


def latest_boards(environments: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """``{slug: board}`` for the games with a renderer whose latest finished duel has a recorded match: the
    last match's final position, its players and a link to its replay. One query whatever the number of
    games (each game's latest duel through the ``(environment, -finished_at)`` index, then its last match)."""
    from core.models import Duel, Environment, Match

    ids = [env.pk for env in environments if has_renderer(env.slug)]
    if not ids:
        return {}
    latest_duel = (
        Duel.objects.filter(environment=OuterRef(OuterRef("pk")), state=Duel.State.FINISHED)
        .exclude(finished_at=None)
        .order_by("-finished_at")
        .values("pk")[:1]
    )
    last_match = Match.objects.filter(duel_id=Subquery(latest_duel)).order_by("-index").values("pk")[:1]
    picked = Environment.objects.filter(pk__in=ids).annotate(m=Subquery(last_match)).values("m")
    matches = (
        Match.objects.filter(pk__in=picked)
        .select_related("duel__environment", "duel__revision_1__competitor", "duel__revision_2__competitor")
        .only(
            "states",
            "packed_moves",
            "first_player",
            "duel__environment__slug",
            "duel__revision_1__competitor__name",
            "duel__revision_2__competitor__name",
        )
    )
    out = {}
    for m in matches:
        d = m.duel
        states = _recorded_states(d.environment.slug, m.states, m.actions)
        if not states:  # a replay retention cleared: the sample stands in
            continue
        out[d.environment.slug] = {
            "state": states[-1],
            "players": [d.revision_1.competitor.name, d.revision_2.competitor.name],
            "first_player": m.first_player,
            "url": reverse("web:match", args=[m.pk]),
        }
    return out


def boards(slugs: list[str], latest: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """``{slug: {"state", "players", "first_player", ...}}`` for ``boards.js``: the latest duel's position
    from ``latest`` when there is one, else the sample (games without either are left out)."""
    out = {}
    for slug in slugs:
        if latest and slug in latest:
            out[slug] = latest[slug]
        elif (state := sample_position(slug)) is not None:
            out[slug] = _sample(state)
    return out
