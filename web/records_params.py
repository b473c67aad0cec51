"""Parsing the game-records query string (``since``, ``until``, ``min_rating``, ``after_id``, ``limit``),
shared by the download page and the API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from core.records import RecordFilter, parse_when

N = TypeVar("N", int, float)

#: Matches per API page unless ``limit`` says otherwise, and the most one page may hold.
DEFAULT_LIMIT = 1000
MAX_LIMIT = 10000


class RecordParamsError(ValueError):
    """A query parameter is malformed; the message says which and why."""


def parse_record_params(params: Mapping[str, str], *, paged: bool) -> RecordFilter:
    """A ``RecordFilter`` from query parameters. ``paged`` (the API) applies ``DEFAULT_LIMIT`` when no
    ``limit`` is given and caps it at ``MAX_LIMIT``; otherwise no limit unless one is asked for."""
    try:
        since = parse_when(params.get("since"))
        until = parse_when(params.get("until"), end=True)
    except ValueError as exc:
        raise RecordParamsError(str(exc)) from exc
    min_rating = _number(params, "min_rating", float)
    after_id = _number(params, "after_id", int) or 0
    limit = _number(params, "limit", int)
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise RecordParamsError(f"limit must be between 1 and {MAX_LIMIT}")
    if paged and limit is None:
        limit = DEFAULT_LIMIT
    if after_id < 0:
        raise RecordParamsError("after_id must not be negative")
    return RecordFilter(since=since, until=until, min_rating=min_rating, after_id=after_id, limit=limit)


def _number(params: Mapping[str, str], name: str, kind: type[N]) -> N | None:
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    try:
        return kind(raw)
    except ValueError:
        raise RecordParamsError(f"{name} must be a number, not {raw!r}") from None
