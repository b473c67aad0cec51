"""Game records: JSON Lines of every step, replayable with the rules, filtered, paged, private-safe."""

from __future__ import annotations

import gzip
import json
import math
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

import environments
from core.models import Duel, Match, Rating, RatingHistory
from core.records import RecordFilter, iter_records
from tests.web import factories

pytestmark = pytest.mark.django_db

SLUG = "connect-four"


def _lines(response) -> list[dict]:
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return [json.loads(line) for line in body.decode().splitlines()]


def _by_match(lines: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for line in lines:
        out.setdefault(line["match_id"], []).append(line)
    return out


def _api(client, **params):
    return client.get(reverse("web:api:records", args=[SLUG]), params)


@pytest.fixture
def arena(env, alice, bob):
    """Public agents of Alice and Bob, a private one of Carol; duels between them (4 matches each)."""
    carol = factories.user("carol@example.com", display_name="Carol")
    a = factories.competitor(owner=alice, env=env, is_public=True)
    b = factories.competitor(owner=bob, env=env, is_public=True)
    c = factories.competitor(owner=carol, env=env, is_public=False)
    duels = {
        "public": factories.duel(a, b, finished_ago_s=3 * 86400),
        "alice_vs_private": factories.duel(a, c, finished_ago_s=86400),
        "bob_vs_private": factories.duel(c, b, finished_ago_s=60),
    }
    return {"a": a, "b": b, "c": c, "carol": carol, "duels": duels}


def test_each_line_is_one_step_that_replays_with_the_game_rules(client, arena):
    game = environments.get_game(SLUG)
    matches = _by_match(_lines(_api(client)))
    stored = {m.pk: m for m in Match.objects.filter(duel=arena["duels"]["public"])}
    assert set(matches) == set(stored)

    for match_id, steps in matches.items():
        match = stored[match_id]
        assert [s["step"] for s in steps] == list(range(len(match.actions)))
        assert steps[0]["state"] == game.initial_state()
        state = steps[0]["state"]
        for i, s in enumerate(steps):
            assert s["state"] == state and s["seat"] == game.to_move(state)
            seat_0 = match.first_player
            assert s["player"] == (
                seat_0 if s["seat"] == 0 else {"PLAYER_1": "PLAYER_2"}.get(seat_0, "PLAYER_1")
            )
            state = game.apply(state, s["action"])
            assert state == match.states[i + 1]  # the stored replay, state after each action
            assert s["environment"] == SLUG and s["result"] == match.result and s["duel_id"] == match.duel_id
        last = steps[-1]
        assert last["done"] and last["final_state"] == state and game.is_over(state)
        assert all(s["reward"] == 0 and not s["done"] for s in steps[:-1])
        expected = {"PLAYER_1_WIN": (1, -1), "PLAYER_2_WIN": (-1, 1), "DRAW": (0, 0)}[match.result]
        assert (last["rewards"]["PLAYER_1"], last["rewards"]["PLAYER_2"]) == expected
        assert last["reward"] == last["rewards"][last["player"]]


def test_replays_stored_without_the_initial_state_export_the_same_steps(client, arena):
    # The referee stores only the states after each action; older rows start with the initial state.
    match = Match.objects.filter(duel=arena["duels"]["public"]).first()
    before = [s for s in _lines(_api(client)) if s["match_id"] == match.pk]
    Match.objects.filter(pk=match.pk).update(states=match.states[1:])
    after = [s for s in _lines(_api(client)) if s["match_id"] == match.pk]
    assert after == before


def test_private_agents_games_are_left_out_for_everyone_but_their_owner_and_staff(client, arena, alice, bob):
    d = arena["duels"]
    ids = {k: set(Match.objects.filter(duel=v).values_list("pk", flat=True)) for k, v in d.items()}

    assert set(_by_match(_lines(_api(client)))) == ids["public"]
    client.force_login(alice)
    assert set(_by_match(_lines(_api(client)))) == ids["public"]  # she played Carol's private agent
    client.force_login(bob)
    assert set(_by_match(_lines(_api(client)))) == ids["public"]
    client.force_login(arena["carol"])
    assert set(_by_match(_lines(_api(client)))) == set().union(*ids.values())  # hers, and the public games
    client.force_login(factories.user("staff@example.com", is_staff=True))
    assert (
        set(_by_match(_lines(_api(client))))
        == ids["public"] | ids["alice_vs_private"] | ids["bob_vs_private"]
    )


def test_carol_sees_her_own_games_only_with_public_opponents(client, arena, env):
    other_private = factories.competitor(env=env, is_public=False)
    hidden = factories.duel(arena["c"], other_private)
    client.force_login(arena["carol"])
    seen = set(_by_match(_lines(_api(client))))
    assert seen.isdisjoint(Match.objects.filter(duel=hidden).values_list("pk", flat=True))


def test_the_date_range_selects_duels_by_finish_time(client, arena, alice):
    client.force_login(factories.user("staff2@example.com", is_staff=True))
    d = arena["duels"]
    today = timezone.localdate()
    since = (today - timedelta(days=2)).isoformat()
    recent = _by_match(_lines(_api(client, since=since)))
    assert {line[0]["duel_id"] for line in recent.values()} == {
        d["alice_vs_private"].pk,
        d["bob_vs_private"].pk,
    }
    until = (today - timedelta(days=2)).isoformat()  # a bare date includes that whole day
    old = _by_match(_lines(_api(client, until=until)))
    assert {line[0]["duel_id"] for line in old.values()} == {d["public"].pk}
    until_dt = (timezone.now() - timedelta(hours=12)).isoformat()
    window = _by_match(_lines(_api(client, since=since, until=until_dt)))
    assert {line[0]["duel_id"] for line in window.values()} == {d["alice_vs_private"].pk}


def _history(comp, duel, mu, sigma):
    rating, _ = Rating.objects.get_or_create(environment=comp.environment, competitor=comp)
    RatingHistory.objects.create(rating=rating, duel=duel, mu=mu, sigma=sigma)


def test_min_rating_needs_both_players_conservative_skill_after_the_duel(client, env, alice, bob):
    a, b, c = (factories.competitor(owner=u, env=env, is_public=True) for u in (alice, bob, alice))
    strong = factories.duel(a, b)
    mixed = factories.duel(a, c)
    unrated = factories.duel(b, c)
    _history(a, strong, 30.0, 1.0)  # 27
    _history(b, strong, 29.0, 1.0)  # 26
    _history(a, mixed, 30.0, 1.0)
    _history(c, mixed, 30.0, 3.0)  # 21
    assert unrated.pk  # no history: never passes a rating filter

    duels = {ls[0]["duel_id"] for ls in _by_match(_lines(_api(client, min_rating="25"))).values()}
    assert duels == {strong.pk}
    duels = {ls[0]["duel_id"] for ls in _by_match(_lines(_api(client, min_rating="20.5"))).values()}
    assert duels == {strong.pk, mixed.pk}
    everything = {ls[0]["duel_id"] for ls in _by_match(_lines(_api(client))).values()}
    assert everything == {strong.pk, mixed.pk, unrated.pk}


def test_following_the_next_link_covers_every_line_exactly_once(client, env, alice, bob):
    a, b = (
        factories.competitor(owner=alice, env=env, is_public=True),
        factories.competitor(owner=bob, env=env, is_public=True),
    )
    for _ in range(4):
        factories.duel(a, b, num_matches=3)  # 12 matches
    full = _lines(_api(client, limit="10000"))
    assert len({line["match_id"] for line in full}) == 12

    pages, seen = 0, []
    response = _api(client, limit="5")
    while True:
        pages += 1
        seen.extend(_lines(response))
        link = response.headers.get("Link")
        if not link:
            break
        url = urlsplit(link[1 : link.index(">")])
        response = client.get(f"{url.path}?{url.query}")
    assert pages == 3
    key = [(line["match_id"], line["step"]) for line in seen]
    assert len(key) == len(set(key)) and seen == full
    assert _api(client, limit="5", after_id=str(max(line["match_id"] for line in full))).getvalue() == b""


def test_bad_parameters_are_refused_with_a_reason(client, env):
    response = _api(client, since="yesterday")
    assert response.status_code == 400 and "ISO date" in response.json()["detail"]
    assert _api(client, limit="0").status_code == 400
    assert _api(client, min_rating="high").status_code == 400
    assert client.get(reverse("web:api:records", args=["no-such-game"])).status_code == 404


def _synthetic_matches(a, b, duels: int, per_duel: int) -> int:
    """Many real random games, bulk-inserted; returns the number of steps."""
    steps = 0
    for d in range(duels):
        duel = Duel.objects.create(
            environment=a.environment,
            revision_1=a.current_revision,
            revision_2=b.current_revision,
            state=Duel.State.FINISHED,
            finished_at=timezone.now(),
        )
        rows = []
        for i in range(per_duel):
            states, actions, _ = factories.play_random_match(SLUG, seed=d * 1000 + i)
            rows.append(
                Match(
                    duel=duel,
                    index=i,
                    result="DRAW",
                    first_player="PLAYER_1",
                    states=states[1:],
                    actions=actions,
                )
            )
            steps += len(actions)
        Match.objects.bulk_create(rows)
    return steps


def test_the_download_streams_in_keyset_batches(client, env, alice, bob):
    a, b = (
        factories.competitor(owner=alice, env=env, is_public=True),
        factories.competitor(owner=bob, env=env, is_public=True),
    )
    steps = _synthetic_matches(a, b, duels=10, per_duel=15)  # 150 matches, a few thousand steps
    assert steps > 2000

    response = client.get(reverse("web:records", args=[SLUG]))
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/x-ndjson"
    assert "attachment" in response["Content-Disposition"]
    with CaptureQueriesContext(connection) as queries:
        chunks = list(response.streaming_content)
    match_reads = [q["sql"] for q in queries.captured_queries if '"core_match"' in q["sql"]]
    assert len(match_reads) == math.ceil(150 / 200) + (150 % 200 == 0)  # one batch of at most 200 matches
    assert all("LIMIT 200" in sql for sql in match_reads)
    assert sum(chunk.count(b"\n") for chunk in chunks) == steps


def test_small_batches_read_one_batch_at_a_time(env, alice, bob):
    a, b = (
        factories.competitor(owner=alice, env=env, is_public=True),
        factories.competitor(owner=bob, env=env, is_public=True),
    )
    steps = _synthetic_matches(a, b, duels=2, per_duel=25)
    with CaptureQueriesContext(connection) as queries:
        chunks = list(iter_records(env, None, RecordFilter(), batch_size=8))
    assert len(chunks) == math.ceil(50 / 8)
    assert len([q for q in queries.captured_queries if '"core_match"' in q["sql"]]) == math.ceil(50 / 8)
    assert sum(c.count(b"\n") for c in chunks) == steps


def test_the_game_page_offers_the_download_form(client, env):
    html = client.get(reverse("web:game", args=[SLUG])).content.decode()
    assert "Download game records" in html
    assert f'action="{reverse("web:records", args=[SLUG])}"' in html


def test_the_export_command_writes_gzipped_json_lines(env, alice, bob, tmp_path, capsys):
    a, b = (
        factories.competitor(owner=alice, env=env, is_public=True),
        factories.competitor(owner=bob, env=env, is_public=False),
    )
    steps = _synthetic_matches(a, b, duels=3, per_duel=10)
    out = tmp_path / "exports" / "c4.jsonl.gz"
    call_command("export_records", SLUG, output=str(out))

    with gzip.open(out, "rt") as fh:
        lines = [json.loads(line) for line in fh]
    assert len(lines) == steps  # an operator export includes private agents' games
    assert {line["environment"] for line in lines} == {SLUG}
    assert not list(tmp_path.glob("exports/*.part"))
    print(capsys.readouterr().out.strip())  # "wrote N lines ... (R lines/s)"

    call_command("export_records", SLUG, output=str(out), public_only=True)
    with gzip.open(out, "rt") as fh:
        assert fh.read() == ""


def test_the_download_form_submitted_empty_downloads_everything_visible(client, arena):
    url = reverse("web:records", args=[SLUG])
    lines = _lines(client.get(url, {"since": "", "until": "", "min_rating": ""}))
    assert {line["duel_id"] for line in lines} == {arena["duels"]["public"].pk}
    refused = client.get(url, {"since": "last week"})
    assert refused.status_code == 400 and b"ISO date" in refused.content
