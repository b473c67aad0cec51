"""Text from builds, smoke tests and duels, made readable for the agent's owner.

* ``scrub_paths``: the server's own folders (``DATA_DIR``, the checkout, the local sandbox's temporary
  copies) are internal details; an agent's files are shown where the agent sees them, under ``/agent``.
* ``explain_error``: the referee numbers moves across both players ("at move 5" is the 5th move of the
  match); the owner thinks in their own moves, so the sentence says both, and names the players.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from django.conf import settings

#: The local sandbox's copy of an agent (in the system's temporary folder, ``arena-local-*/agent``).
_TMP_AGENT = re.compile(r"/[^\s'\"]*/arena-local-[A-Za-z0-9_]+/agent\b")
_BUILT_AGENT = r"/builds/[0-9a-f]{16,}"
_AT_MOVE = re.compile(r"\bat move (\d+)(?: of the match)?(?!\d| of the match| \(its)")
_SEAT = re.compile(r"\bPLAYER_([12])\b(?!_)")


@cache
def _prefixes(data_dir: str, base_dir: str) -> list[tuple[re.Pattern[str], str]]:
    rules: list[tuple[re.Pattern[str], str]] = []
    data_forms = {data_dir, str(Path(data_dir).resolve())}
    for form in sorted(data_forms, key=len, reverse=True):
        rules.append((re.compile(re.escape(form.rstrip("/")) + _BUILT_AGENT), "/agent"))
    for form in sorted(data_forms, key=len, reverse=True):
        rules.append((re.compile(re.escape(form.rstrip("/")) + r"(?=/|\b)"), "<data>"))
    base_forms = {base_dir, str(Path(base_dir).resolve())}
    for form in sorted(base_forms, key=len, reverse=True):
        rules.append((re.compile(re.escape(form.rstrip("/") + "/")), ""))
    return rules


def scrub_paths(text: str) -> str:
    """``text`` with the server's folders replaced: built agents become ``/agent``, ``DATA_DIR``
    ``<data>``, the checkout's own files are named relative to it."""
    if not text:
        return text or ""
    text = _TMP_AGENT.sub("/agent", text)
    for pattern, replacement in _prefixes(str(settings.DATA_DIR), str(settings.BASE_DIR)):
        text = pattern.sub(replacement, text)
    return text


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def explain_error(message: str, names: tuple[str, str] | None = None) -> str:
    """A referee message as its owner reads it: ``at move 5`` (a ply: both players' moves counted) also
    says ``its 3rd move``; ``PLAYER_1`` / ``PLAYER_2`` get the competitors' names when given."""
    if not message:
        return ""

    def at_move(match: re.Match[str]) -> str:
        ply = int(match.group(1))
        return f"at move {ply} of the match (its {_ordinal((ply + 1) // 2)} move)"

    text = _AT_MOVE.sub(at_move, scrub_paths(message))
    if names:
        text = _SEAT.sub(lambda m: f"{names[int(m.group(1)) - 1]} (player {m.group(1)})", text)
    return text
