"""Light results: a recorded match keeps its actions and move times packed (``core.match_moves``) and the
least of its states (``core.match_states``), and every reader (match page, match replay and duel replays
API, the duel JSON ``rl-arena download`` stores, the game records) gives what it gave for the same duel
stored as before: every state, and the actions and move times as the ``jsonb`` columns gave them back
(what migration 0019 packed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

import environments
from core.actions import Claim, claim_duel, record_duel_result
from core.match_moves import pack, unpack
from core.match_states import compact, recorded
from core.models import Duel, Match
from run_duel.duel_result import validate_duel_json
from tests.real_duels import random_duel_json
from tests.web import factories

pytestmark = pytest.mark.django_db

GAMES = ["connect-four", "tic-tac-toe", "quarto", "leduc-holdem", "goofspiel"]


def _real_duel_json(slug: str, matches: int = 4) -> dict[str, Any]:
    """A duel JSON played by the real referee (random players, in-process harness), as it crosses the
    wire (plain JSON)."""
    duel = random_duel_json(slug, matches)
    validate_duel_json(duel)
    return duel


def _queued(a, b) -> Duel:
    return Duel.objects.create(
        environment=a.environment, revision_1=a.current_revision, revision_2=b.current_revision
    )


def _as_jsonb_gave_it(value: Any) -> Any:
    """``value`` stored in a ``jsonb`` column and read back (PostgreSQL), as the JSON columns did."""
    if connection.vendor != "postgresql":
        return json.loads(json.dumps(value))
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [json.dumps(value)])
        return json.loads(cursor.fetchone()[0])


def _stored_with_every_state(a, b, duel_json: dict[str, Any]) -> Duel:
    """The duel as the record path stored it before light results: every match with every state, its
    actions and move times in ``jsonb`` columns (packed from what those gave back, as migration 0019
    converts such rows)."""
    duel = _queued(a, b)
    claimed = claim_duel(duel.pk, "test-worker")
    assert claimed is not None
    assert record_duel_result(Claim.of(claimed), duel_json)
    for i, m in enumerate(duel_json["matches"]):
        Match.objects.filter(duel=duel, index=i).update(
            states=m["states"],
            packed_moves=pack(_as_jsonb_gave_it(m["actions"]), _as_jsonb_gave_it(m["move_times"])),
        )
    return duel


def _recorded(a, b, duel_json: dict[str, Any]) -> Duel:
    duel = _queued(a, b)
    claimed = claim_duel(duel.pk, "test-worker")
    assert claimed is not None
    assert record_duel_result(Claim.of(claimed), duel_json)
    return duel


#: What differs between two rows of the same duel: their ids, and when each was recorded.
_ROW_KEYS = ("match", "duel", "match_id", "duel_id", "played_at")


def _without_ids(data: Any) -> Any:
    """A reader's answer without :data:`_ROW_KEYS`."""
    if isinstance(data, list):
        return [_without_ids(x) for x in data]
    if isinstance(data, dict):
        return {k: _without_ids(v) for k, v in data.items() if k not in _ROW_KEYS}
    return data


def _replay_page_data(client, match: Match) -> dict:
    html = client.get(reverse("web:match", args=[match.pk])).content.decode()
    start = html.index('<script id="replay-data" type="application/json">')
    end = html.index("</script>", start)
    return json.loads(html[start:end].split(">", 1)[1])


def _readers(client, duel: Duel) -> dict[str, Any]:
    """What every reader of a duel's matches answers."""
    matches = list(duel.matches.order_by("index"))
    replays = client.get(reverse("web:api:duel-replays", args=[duel.pk]))
    assert replays.status_code == 200
    return {
        "match replay API": [
            client.get(reverse("web:api:match-replay", args=[m.pk])).json() for m in matches
        ],
        "duel replays API (the duel JSON rl-arena download stores)": replays.json()["matches"],
        "match page": [_replay_page_data(client, m) for m in matches],
    }


def _record_lines(client, slug: str) -> dict[int, list[dict]]:
    response = client.get(reverse("web:api:records", args=[slug]))
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    by_duel: dict[int, list[dict]] = {}
    for line in body.decode().splitlines():
        row = json.loads(line)
        by_duel.setdefault(row["duel_id"], []).append(row)
    return by_duel


@pytest.mark.parametrize("slug", GAMES)
def test_a_result_stores_the_least_states_and_reads_as_with_every_state(client, alice, bob, slug):
    env = factories.environment(slug)
    a = factories.competitor(alice, env, "a", is_public=True)
    b = factories.competitor(bob, env, "b", is_public=True)
    duel_json = _real_duel_json(slug)
    old = _stored_with_every_state(a, b, duel_json)  # rows written before: mixed data in one table
    new = _recorded(a, b, duel_json)

    game = environments.get_game(slug)
    for m, played in zip(new.matches.order_by("index"), duel_json["matches"], strict=True):
        assert m.actions == played["actions"] and m.move_times == played["move_times"]
        if len(played["actions"]) > 1:  # stored compact: nothing, or the deal of a game with chance
            assert m.states == (played["states"][:1] if game.has_chance else [])
        assert recorded(game, m.states, m.actions) == played["states"]
    assert [len(m.states) for m in old.matches.order_by("index")] == [
        len(m["states"]) for m in duel_json["matches"]
    ]

    before, after = _readers(client, old), _readers(client, new)
    for reader in before:
        assert _without_ids(after[reader]) == _without_ids(before[reader]), reader
    assert all(r["states"] for r in after["match replay API"])
    lines = _record_lines(client, slug)
    assert lines[new.pk] and _without_ids(lines[new.pk]) == _without_ids(lines[old.pk])


def test_states_the_rules_do_not_give_back_are_kept_as_recorded(client, env, alice, bob):
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    duel_json = _real_duel_json("connect-four", matches=2)
    match = duel_json["matches"][0]
    match["states"][-1] = {**match["states"][-1], "last_action": None}  # not what the rules give
    duel = _recorded(a, b, duel_json)
    first, second = duel.matches.order_by("index")
    assert first.states == match["states"]  # kept, as recorded
    assert second.states == []
    game = environments.get_game("connect-four")
    assert compact(game, match["states"][:-1], match["actions"]) == match["states"][:-1]  # not the shape


def test_a_result_is_written_with_one_copy_on_postgresql(env, alice, bob):
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's; SQLite takes bulk_create (every other test here)")
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    duel_json = _real_duel_json("connect-four", matches=3)
    duel = _queued(a, b)
    claimed = claim_duel(duel.pk, "test-worker")
    with CaptureQueriesContext(connection) as queries:
        assert record_duel_result(Claim.of(claimed), duel_json)
    assert not [q for q in queries.captured_queries if 'INSERT INTO "core_match"' in q["sql"]]
    assert Match.objects.filter(duel=duel).count() == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_typeof(packed_moves)::text, packed_moves FROM core_match ORDER BY index")
        rows = cursor.fetchall()
    assert {row[0] for row in rows} == {"bytea"}
    for (_, packed), m in zip(rows, duel_json["matches"], strict=True):
        assert unpack(packed) == (m["actions"], m["move_times"])
        assert len(packed) <= 4 + 4 * len(m["actions"])  # a byte an action, at most three a time


def test_the_admin_shows_a_matchs_actions_and_move_times(admin_client, env, alice, bob):
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    duel_json = _real_duel_json("connect-four", matches=1)
    played = duel_json["matches"][0]
    match = _recorded(a, b, duel_json).matches.get()
    page = admin_client.get(reverse("admin:core_match_change", args=[match.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert str(played["actions"]) in html and str(played["move_times"]) in html
    duel_page = admin_client.get(reverse("admin:core_duel_change", args=[match.duel_id]))
    assert duel_page.status_code == 200 and str(match) in duel_page.content.decode()  # its inline row
