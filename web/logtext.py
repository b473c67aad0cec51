"""Text from builds, smoke tests and duels, made readable for the agent's owner.

* ``scrub_paths``: the server's own folders (``DATA_DIR``, the checkout, the local sandbox's temporary
  copies) are internal details; an agent's files are shown where the agent sees them, under ``/agent``.
* ``explain_error``: names the players in the referee's own sentences. Only those are touched: the
  header line of the message (and of an appended ``Also ...`` paragraph, ``DETAIL_SEPARATOR``) is ours;
  everything after it (the agent's traceback, its stderr, what it sent) is the user's and is shown as they
  wrote it. The referee writes where a fault happened in both counts ("its move 3 (move 5 of the match)",
  ``run_duel.seat.ordinal_move``); rows stored before it did say "PLAYER_1 raised X at move 5:", and that
  exact header gets the same clarification.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from django.conf import settings

#: The local sandbox's copy of an agent (in the system's temporary folder, ``arena-local-*/agent``).
_TMP_AGENT = re.compile(r"/[^\s'\"]*/arena-local-[A-Za-z0-9_]+/agent\b")
_BUILT_AGENT = r"/builds/[0-9a-f]{16,}"
#: The referee's header before it wrote both counts: "[match 1 of 4: CRASH: ]PLAYER_1 raised X at move 5:".
_OLD_HEADER = re.compile(r"^((?:match \d+ of \d+: [A-Z_]+: )?PLAYER_[12] raised [\w.]+ at move )(\d+):$")
#: The seat names the referee's header starts with: "[match 1 of 4: CRASH: ]PLAYER_1 raised ...", and in an
#: ``Also`` paragraph " PLAYER_2: PLAYER_2 timed out ..." or ", when told the match was over: PLAYER_2 ...".
_LEADING_SEATS = re.compile(
    r"^((?:match \d+ of \d+: [A-Z_]+: | |, when told the match was over: )?)"
    r"(PLAYER_[12](?:: PLAYER_[12])?)(?!\w)"
)
_SEAT = re.compile(r"PLAYER_([12])")
#: How the referee appends what happened to the other player (``run_duel.referee``).
_ALSO = "\n\nAlso"


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


def _explain_header(part: str, names: tuple[str, str] | None) -> str:
    head, newline, rest = part.partition("\n")
    head = _OLD_HEADER.sub(
        lambda m: f"{m.group(1)}{m.group(2)} of the match (its {_ordinal((int(m.group(2)) + 1) // 2)} move):",
        head,
    )
    if names:

        def named(seat: re.Match[str]) -> str:
            return f"{names[int(seat.group(1)) - 1]} (player {seat.group(1)})"

        head = _LEADING_SEATS.sub(lambda m: m.group(1) + _SEAT.sub(named, m.group(2)), head)
    return head + newline + rest


def explain_error(message: str, names: tuple[str, str] | None = None) -> str:
    """A referee message as its owner reads it: paths scrubbed; in the referee's own header lines only,
    ``PLAYER_1`` / ``PLAYER_2`` get the competitors' names when given, and an old header's ``at move 5``
    (a ply: both players' moves counted) also says ``its 3rd move``. The agent's own text (traceback,
    stderr, output) is left as it is."""
    if not message:
        return ""
    parts = scrub_paths(message).split(_ALSO)
    return _ALSO.join(_explain_header(part, names) for part in parts)
