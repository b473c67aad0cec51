"""The packed form of a match's actions and move times (``core/match_moves.py``): every game's real matches
come back exactly, odd shapes fall back to JSON and read as ``jsonb`` gave them, bad bytes are refused,
and a Match row reads and writes the lists through it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from core.match_moves import EMPTY, VERSION, MovesFormatError, pack, unpack
from core.models import Match
from environments.registry import all_slugs
from tests.real_duels import random_duel_json


def _real_matches(slug: str, matches: int = 2) -> list[dict[str, Any]]:
    return random_duel_json(slug, matches)["matches"]


@pytest.mark.parametrize("slug", all_slugs())
def test_every_games_real_matches_come_back_exactly_in_the_compact_form(slug):
    for m in _real_matches(slug):
        data = pack(m["actions"], m["move_times"])
        assert data[0] == VERSION and data[1] == 0  # ints and whole microseconds: no JSON
        actions, times = unpack(data)
        assert actions == m["actions"] and times == m["move_times"]
        assert [type(t) for t in times] == [type(t) for t in m["move_times"]]
        assert [t.hex() for t in times] == [t.hex() for t in m["move_times"]]  # bit for bit
        assert len(data) < (len(json.dumps(m["actions"])) + len(json.dumps(m["move_times"]))) / 2


def test_an_empty_match_is_no_bytes():
    assert pack([], []) == pack(None, None) == EMPTY == b""
    assert unpack(b"") == unpack(None) == ([], [])
    assert unpack(pack([], [0.5])) == ([], [0.5])  # times without actions are still kept
    assert unpack(pack([3], [])) == ([3], [])


@pytest.mark.parametrize(
    ("actions", "times", "json_flags"),
    [
        ([0, -1, 2**63 - 1, -(2**63)], [0.0, 1e-06, 12345.678901, 4294.967296], 0),  # int64 ends, > uint32 µs
        ([2**63], [0.1], 1),  # beyond 64 bits
        ([True, False], [0.1, 0.2], 1),  # bools are not ints here
        (["fold", "call"], [0.1, 0.2], 1),
        ([[1, 2], {"b": 1, "aa": [None, 1.5]}], [0.1, 0.2], 1),
        ([1.0, 2], [0.1, 0.2], 1),
        ([1, 2], [None, 0.25], 2),  # a person's move in a live game has no time
        ([1, 2], [0, 1], 2),  # ints stay ints
        ([1, 2], [0.1234567, 0.5], 2),  # more than six decimals
        ([1, 2], [-0.5, 0.5], 2),
        ([1, 2], [-0.0, 0.5], 2),
        ([{"x": 1}], [None], 3),
    ],
)
def test_other_shapes_fall_back_to_json_and_come_back(actions, times, json_flags):
    data = pack(actions, times)
    assert data[1] == json_flags
    got_actions, got_times = unpack(data)
    assert got_actions == actions and got_times == times
    assert [type(x) for x in got_times] == [type(x) for x in times]
    assert json.dumps(got_times) == json.dumps(times)  # -0.0 and ints kept as they were


@pytest.mark.django_db
def test_json_fallback_objects_read_in_the_key_order_jsonb_gave_them():
    if connection.vendor != "postgresql":
        pytest.skip("jsonb is PostgreSQL's")
    actions = [{"zeta": 1, "a": {"ccc": 1, "bb": 2, "b": 3}, "é": 0, "mid": [{"yy": 1, "x": 2}]}]
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [json.dumps(actions)])
        (as_jsonb,) = cursor.fetchone()
    got, _ = unpack(pack(actions, [0.5]))
    assert json.dumps(got, ensure_ascii=False) == json.dumps(json.loads(as_jsonb), ensure_ascii=False)


def test_nan_is_refused_as_jsonb_refused_it():
    with pytest.raises(ValueError):
        pack([1], [float("nan")])


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (bytes([2, 0, 0, 0]), "unknown version"),
        (bytes([VERSION]), "unknown flags"),
        (bytes([VERSION, 4, 0, 0]), "unknown flags"),
        (bytes([VERSION, 0, 3, 1, 2]), "cut short"),
        (bytes([VERSION, 0, 1, 0x80]), "cut short"),
        (bytes([VERSION, 0, 1, 2, 1, 3, 9]), "after the packed moves"),
        (bytes([VERSION, 1, 5]) + b"[1,2", "cut short"),
        (bytes([VERSION, 1, 3]) + b"[1," + bytes([0]), "bad JSON"),
        (bytes([VERSION, 1, 2]) + b"{}" + bytes([0]), "not a list"),
        (bytes([VERSION, 0, 1]) + b"\xff" * 11 + b"\x01" + bytes([0]), "longer than 64 bits"),
    ],
)
def test_bytes_that_are_not_packed_moves_are_refused(data, why):
    with pytest.raises(MovesFormatError, match=why):
        unpack(data)


def test_a_match_takes_and_gives_the_lists():
    m = Match(index=0, actions=[3, 4, 3], move_times=[0.000031, 0.000402, 1.5])
    assert m.actions == [3, 4, 3] and m.move_times == [0.000031, 0.000402, 1.5]
    assert unpack(m.packed_moves) == ([3, 4, 3], [0.000031, 0.000402, 1.5])
    m.actions = [1]
    assert m.actions == [1] and m.move_times == [0.000031, 0.000402, 1.5]
    m.move_times = None
    assert m.move_times == [] and m.actions == [1]
    assert Match(index=0).packed_moves == EMPTY and Match(index=0).actions == []


@pytest.mark.django_db
def test_a_stored_match_reads_back_its_lists():
    from tests.web import factories

    env = factories.environment()
    a = factories.competitor(factories.user(), env, "a")
    b = factories.competitor(factories.user(), env, "b")
    duel = factories.duel(a, b, num_matches=1)
    m = duel.matches.get()
    again = Match.objects.get(pk=m.pk)
    assert again.actions == m.actions and again.move_times == m.move_times and again.actions
    assert Match.objects.filter(pk=m.pk, packed_moves=m.packed_moves).exists()
