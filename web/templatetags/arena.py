"""Template helpers: state badges, numbers and duel results."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

_BADGE_CLASS = {
    "ELIGIBLE": "ok",
    "FINISHED": "ok",
    "SUCCEEDED": "ok",
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
    """Split a log into lines for numbered display."""
    return (text or "").splitlines()
