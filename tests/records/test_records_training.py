"""Training-ready records: each seat's own observation and action mask, as JSON Lines and as Parquet, and
the light client's loader reading both the same."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse
from rl_arena_client.records import read_records, seat_episodes

import environments
from core.models import Match
from tests.web import factories

pytestmark = pytest.mark.django_db


def _api_lines(client, slug: str) -> list[dict]:
    response = client.get(reverse("web:api:records", args=[slug]))
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return [json.loads(line) for line in body.decode().splitlines()]


def test_each_step_carries_what_the_seat_received_and_its_legal_moves(client, env, alice, bob):
    a = factories.competitor(owner=alice, env=env, is_public=True)
    b = factories.competitor(owner=bob, env=env, is_public=True)
    factories.duel(a, b, num_matches=2)
    game = environments.get_game("connect-four")
    for step in _api_lines(client, "connect-four"):
        board = np.array(step["state"]["board"])
        mine = 1 + step["seat"]  # the stored board marks seat 0's pieces 1 and seat 1's pieces 2
        observed = np.asarray(step["observation"])
        assert observed.shape == (6, 7)
        assert ((observed == 1) == (board == mine)).all()  # the agent's own pieces are 1 for it
        assert ((observed == -1) == ((board != 0) & (board != mine))).all()
        legal = game.legal_actions(step["state"])
        assert step["action_mask"] == [int(i in legal) for i in range(game.num_actions)]
        assert step["action_mask"][step["action"]] == 1


def test_a_seat_never_sees_the_other_seats_private_card(client, alice, bob):
    leduc = factories.environment("leduc-holdem")
    a = factories.competitor(owner=alice, env=leduc, is_public=True)
    b = factories.competitor(owner=bob, env=leduc, is_public=True)
    factories.duel(a, b, num_matches=4)
    game = environments.get_game("leduc-holdem")
    steps = _api_lines(client, "leduc-holdem")
    assert steps
    for step in steps:
        assert step["observation"] == game.observation(step["state"], step["seat"]).tolist()
        swapped = json.loads(json.dumps(step["state"]))
        taken = {*swapped["cards"][:2], swapped["public"]}
        swapped["cards"][1 - step["seat"]] = next(c for c in range(6) if c not in taken)
        # another card for the opponent: what this seat observed does not change
        assert game.observation(swapped, step["seat"]).tolist() == step["observation"]


def test_parquet_and_json_lines_hold_the_same_steps_and_the_loader_reads_both(env, alice, bob, tmp_path):
    a = factories.competitor(owner=alice, env=env, is_public=True)
    b = factories.competitor(owner=bob, env=env, is_public=True)
    factories.duel(a, b, num_matches=3)
    factories.duel(b, a, num_matches=2)
    call_command("export_records", "connect-four", output=str(tmp_path / "c4.jsonl.gz"))
    call_command("export_records", "connect-four", output=str(tmp_path / "c4.parquet"))

    from_jsonl = list(read_records(tmp_path / "c4.jsonl.gz"))
    from_parquet = list(read_records(tmp_path / "c4.parquet"))
    assert len(from_jsonl) == len(from_parquet) == sum(len(m.actions) for m in Match.objects.all())
    for x, y in zip(from_jsonl, from_parquet, strict=True):
        assert x["observation"].shape == y["observation"].shape == (6, 7)
        assert (x["observation"] == y["observation"]).all()
        assert (x["action_mask"] == y["action_mask"]).all()
        rest = ("observation", "action_mask")
        assert {k: v for k, v in x.items() if k not in rest} == {k: v for k, v in y.items() if k not in rest}

    episodes = seat_episodes(from_parquet)
    assert len(episodes) == 2 * Match.objects.count()
    for (match_id, seat), steps in episodes.items():
        assert all(s["seat"] == seat and s["match_id"] == match_id for s in steps)
        assert [s["step"] for s in steps] == sorted(s["step"] for s in steps)


def test_the_site_offers_the_records_as_parquet(client, env, alice, bob, tmp_path):
    a = factories.competitor(owner=alice, env=env, is_public=True)
    b = factories.competitor(owner=bob, env=env, is_public=True)
    factories.duel(a, b, num_matches=2)
    response = client.get(reverse("web:records", args=["connect-four"]), {"format": "parquet"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.apache.parquet"
    path = tmp_path / "download.parquet"
    path.write_bytes(b"".join(response.streaming_content))
    steps = list(read_records(path))
    assert len(steps) == sum(len(m.actions) for m in Match.objects.all())
    assert [s["match_id"] for s in steps] == sorted(s["match_id"] for s in steps)
