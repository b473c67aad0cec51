"""A match's actions and move times at rest: one small ``bytea`` per match (``Match.moves``).

Every reader and writer of ``Match.actions`` / ``Match.move_times`` goes through :func:`pack` and
:func:`unpack` (the model's properties of those names, the record path's ``COPY``, the records, retention,
the migration that converted the JSON columns). The states are not here: ``core/match_states.py``.

Layout, version 1 (all integers unsigned LEB128 varints unless said)::

    b""                                   no actions and no move times (a cleared replay, an empty match)
    0x01 flags actions-part times-part    otherwise

    flags      bit 0: actions as JSON, bit 1: move times as JSON (other bits 0)
    actions    varint count, then each action as a zigzag varint  (every action an int, |a| < 2**63)
               or, with flag bit 0, varint length + UTF-8 JSON of the list
    times      varint count, then each time in whole microseconds   (every time a float t >= 0 with
               round(t * 1e6) / 1e6 == t: the referee rounds to 6 decimals, and k / 1e6 is the nearest
               double to k microseconds, so this gives back the same float)
               or, with flag bit 1, varint length + UTF-8 JSON of the list

A ten-match Connect Four result's actions and times take about 45 bytes a match this way (22 actions of one
byte, 22 times of one to three bytes) instead of about 530 as two ``jsonb`` arrays of numerics.

The JSON fallback keeps any other shape exactly as ``jsonb`` gave it back before this format: objects
with their keys in ``jsonb``'s order (shorter keys first, then bytewise), so readers see what they saw.
A reader never meets a version it does not know: :func:`unpack` raises :class:`MovesFormatError` on one
(and on truncated or trailing bytes) rather than guess.
"""

from __future__ import annotations

import json
import math
from typing import Any

VERSION = 1
EMPTY = b""

_ACTIONS_JSON = 1
_TIMES_JSON = 2
_INT64 = 1 << 63


class MovesFormatError(ValueError):
    """Bytes that are not a packed match of a known version."""


def pack(actions: list[Any] | None, move_times: list[Any] | None) -> bytes:
    """The stored bytes of a match's ``actions`` and ``move_times`` (``None`` counts as ``[]``)."""
    actions = list(actions or [])
    move_times = list(move_times or [])
    if not actions and not move_times:
        return EMPTY
    flags = 0
    out = bytearray((VERSION, 0))
    if _all_small_ints(actions):
        _put(out, len(actions))
        for a in actions:
            _put(out, (a << 1) ^ (a >> 63))  # zigzag
    else:
        flags |= _ACTIONS_JSON
        _put_json(out, actions)
    micros = _micros(move_times)
    if micros is not None:
        _put(out, len(micros))
        for k in micros:
            _put(out, k)
    else:
        flags |= _TIMES_JSON
        _put_json(out, move_times)
    out[1] = flags
    return bytes(out)


def unpack(data: bytes | memoryview | None) -> tuple[list[Any], list[Any]]:
    """``(actions, move_times)`` from what :func:`pack` stored."""
    if not data:
        return [], []
    buf = bytes(data)
    if buf[0] != VERSION:
        raise MovesFormatError(f"packed moves of unknown version {buf[0]}")
    if len(buf) < 2 or buf[1] & ~(_ACTIONS_JSON | _TIMES_JSON):
        raise MovesFormatError("packed moves with unknown flags")
    flags, pos = buf[1], 2
    actions: list[Any]
    move_times: list[Any]
    if flags & _ACTIONS_JSON:
        actions, pos = _get_json(buf, pos)
    else:
        n, pos = _get(buf, pos)
        actions = []
        for _ in range(n):
            z, pos = _get(buf, pos)
            actions.append((z >> 1) ^ -(z & 1))
    if flags & _TIMES_JSON:
        move_times, pos = _get_json(buf, pos)
    else:
        n, pos = _get(buf, pos)
        move_times = []
        for _ in range(n):
            k, pos = _get(buf, pos)
            move_times.append(k / 1e6)
    if pos != len(buf):
        raise MovesFormatError(f"{len(buf) - pos} bytes after the packed moves")
    return actions, move_times


def unpack_actions(data: bytes | memoryview | None) -> list[Any]:
    return unpack(data)[0]


def unpack_move_times(data: bytes | memoryview | None) -> list[Any]:
    return unpack(data)[1]


def _all_small_ints(values: list[Any]) -> bool:
    return all(type(v) is int and -_INT64 <= v < _INT64 for v in values)


def _micros(times: list[Any]) -> list[int] | None:
    """Whole microseconds giving back exactly ``times``, or ``None`` when some time is not such a float."""
    out = []
    for t in times:
        if type(t) is not float or not math.isfinite(t) or t < 0 or math.copysign(1.0, t) < 0:
            return None
        k = round(t * 1e6)
        if k / 1e6 != t:
            return None
        out.append(k)
    return out


def _put(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _get(buf: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(buf):
            raise MovesFormatError("packed moves cut short")
        byte = buf[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        if byte < 0x80:
            return n, pos
        shift += 7
        if shift > 70:
            raise MovesFormatError("a varint longer than 64 bits in packed moves")


def _jsonb_order(value: Any) -> Any:
    """``value`` with its objects' keys in the order ``jsonb`` keeps them (by length, then bytewise)."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (len(str(k).encode()), str(k).encode()))
        return {str(k): _jsonb_order(value[k]) for k in keys}
    if isinstance(value, list | tuple):
        return [_jsonb_order(v) for v in value]
    return value


def _put_json(out: bytearray, value: list[Any]) -> None:
    text = json.dumps(_jsonb_order(value), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    raw = text.encode()
    _put(out, len(raw))
    out += raw


def _get_json(buf: bytes, pos: int) -> tuple[list[Any], int]:
    n, pos = _get(buf, pos)
    if pos + n > len(buf):
        raise MovesFormatError("packed moves cut short")
    try:
        value = json.loads(buf[pos : pos + n].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MovesFormatError(f"packed moves with bad JSON: {exc}") from exc
    if not isinstance(value, list):
        raise MovesFormatError("packed moves whose JSON is not a list")
    return value, pos + n
