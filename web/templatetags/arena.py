"""Template helpers: state badges, numbers and duel results."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from web.logtext import explain_error, scrub_paths

register = template.Library()

_BADGE_CLASS = {
    "ELIGIBLE": "ok",
    "FINISHED": "ok",
    "SUCCEEDED": "ok",
    "PASSED": "ok",
    "BUILT_OK": "ok",
    "PUBLISHED": "ok",
    "PLAYER_1_WIN": "info",
    "PLAYER_2_WIN": "info",
    "DRAW": "",
    "BUILD_FAILED": "bad",
    "TEST_FAILED": "bad",
    "REJECTED": "bad",
    "FAILED": "bad",
    "ERROR": "bad",
    "PLAYER_1_ERROR": "bad",
    "PLAYER_2_ERROR": "bad",
    "OTHER_ERROR": "warn",
    "BUILDING": "warn",
    "TESTING": "warn",
    "RUNNING": "warn",
    "BUILT": "warn",
    "UPLOADED": "",
    "QUEUED": "",
    "PENDING": "",
}


@register.simple_tag
def badge(value: str, label: str | None = None) -> SafeString:
    """A coloured pill for a state or result (``value`` is the stored code, ``label`` the text shown)."""
    text = label or str(value or "-").replace("_", " ").lower()
    return format_html(
        '<span class="badge {}" data-state="{}">{}</span>', _BADGE_CLASS.get(value, ""), value, text
    )


@register.simple_tag
def verdict_badge(verdict: Any) -> SafeString:
    """A badge for a ``web.progress.Verdict`` (a dash when there is none)."""
    if verdict is None:
        return mark_safe('<span class="muted">—</span>')
    return badge(verdict.code, verdict.label)


@register.filter
def num(value: Any, digits: int = 2) -> str:
    """A float with a fixed number of decimals; '-' for missing values."""
    if value is None or value == "":
        return "-"
    try:
        return f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def duel_outcome(duel: Any, competitor_id: int) -> str:
    """'won', 'lost', 'draw' or 'error' from the point of view of ``competitor_id``."""
    result = getattr(duel, "result", "")
    if not result:
        return duel.get_state_display() if hasattr(duel, "get_state_display") else ""
    if result == "DRAW":
        return "draw"
    if result == "ERROR":
        return "error"
    is_p1 = duel.revision_1.competitor_id == competitor_id
    won = (result == "PLAYER_1_WIN") == is_p1
    return "won" if won else "lost"


@register.filter
def log_lines(text: str) -> list[str]:
    """Split a log into lines for numbered display (the server's folders replaced, see ``scrub_paths``)."""
    return scrub_paths(text or "").splitlines()


@register.filter
def explain(message: str, names: Any = None) -> str:
    """A referee's error message as the owner reads it (``web.logtext.explain_error``); ``names`` is a
    duel (its two competitors' names are used) or nothing."""
    pair = None
    if names is not None and hasattr(names, "revision_1"):
        pair = (names.revision_1.competitor.name, names.revision_2.competitor.name)
    return explain_error(message or "", pair)


@register.filter
def error_lines(text: str) -> tuple[str, str]:
    """A message's first line (prose) and the rest (code: a traceback, a caret under a syntax error)."""
    head, _, rest = str(text or "").partition("\n")
    return head, rest.strip("\n")


@register.simple_tag
def delta(value: float | None, digits: int = 2, neutral: bool = False) -> SafeString:
    """A signed change, green when it rose and red when it fell (e.g. ``+1.25``); ``neutral``: grey either
    way (the cautious skill mu - 3 sigma moves with the uncertainty too: its rise after a loss is no good
    news)."""
    if value is None:
        return mark_safe("")
    cls = "flat" if neutral else "up" if value > 0.005 else "down" if value < -0.005 else "flat"
    return format_html('<span class="delta {}">{}</span>', cls, f"{value:+.{int(digits)}f}")


_MATCH_WINNER = {"PLAYER_1_WIN": 1, "PLAYER_2_WIN": 2}
_MATCH_ERRING = {"PLAYER_1_ERROR": 1, "PLAYER_2_ERROR": 2}


@register.simple_tag
def match_result_badge(match: Any, duel: Any) -> SafeString:
    """A match's result with the players' names: "minimax won", "random erred", "draw"."""
    names = {1: duel.revision_1.competitor.name, 2: duel.revision_2.competitor.name}
    if match.result in _MATCH_WINNER:
        return badge(match.result, f"{names[_MATCH_WINNER[match.result]]} won")
    if match.result in _MATCH_ERRING:
        return badge(match.result, f"{names[_MATCH_ERRING[match.result]]} erred")
    return badge(match.result, match.get_result_display())


@register.filter
def score_so_far(matches: list[Any], seat: int) -> float:
    """The sum of one seat's match scores (1 or 2) over the matches recorded so far."""
    return sum(getattr(m, f"player_{int(seat)}_score") or 0.0 for m in matches)


_OUTCOME_CLASS = {"won": "ok", "lost": "bad", "draw": "", "error": "warn"}


@register.simple_tag
def outcome_badge(outcome: str) -> SafeString:
    """A duel's outcome from one competitor's side (``won``, ``lost``, ``draw``, ``error`` or a state)."""
    return format_html(
        '<span class="badge {}" data-outcome="{}">{}</span>',
        _OUTCOME_CLASS.get(outcome, ""),
        outcome,
        outcome,
    )


@register.filter
def query_for_page(filters: Any, page: int) -> str:
    """The history filters' query string for another page."""
    return filters.query(int(page))


@register.simple_tag
def duel_result_badge(duel: Any) -> SafeString:
    """A duel's result naming the winner ("minimax won"), or its state while it is not over."""
    if duel.result == "PLAYER_1_WIN":
        return badge(duel.result, f"{duel.revision_1.competitor.name} won")
    if duel.result == "PLAYER_2_WIN":
        return badge(duel.result, f"{duel.revision_2.competitor.name} won")
    if duel.result:
        return badge(duel.result, duel.get_result_display())
    return badge(duel.state, duel.get_state_display())


@register.simple_tag
def duel_lengths(environment: Any, short: bool = False) -> str:
    """How many matches a duel of this game has, truthfully: ladder duels vary per pairing (longer when two
    agents are hard to tell apart: ``tournament_manager.actions.ladder_policy``), challenges and tournament
    duels play the game's ``matches_per_duel``. E.g. "ladder duels of 2 to 40 matches; challenges and
    tournaments 10"."""
    from tournament_manager.actions import ladder_policy

    fixed = environment.matches_per_duel
    lengths = ladder_policy(fixed).duel_lengths or (fixed,)
    low, high = min(lengths), max(lengths)
    if short:
        dash = "\u2013"
        return f"ladder {low if low == high else f'{low}{dash}{high}'}, others {fixed}"
    ladder = f"{low}" if low == high else f"{low} to {high}"
    return f"ladder duels of {ladder} matches; challenges and tournaments {fixed}"
