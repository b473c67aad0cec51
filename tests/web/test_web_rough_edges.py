"""Rough edges a new user hit, each checked where it showed: replays, badges, failures, error pages, the
API's front door, the API token, and the CLI's status of a paused competitor."""

from __future__ import annotations

import io
import re

import pytest
from django.test import RequestFactory
from django.urls import reverse
from django.views.defaults import server_error
from rl_arena_client import cli

import environments
from core.models import Build, Competitor, Match, Revision, SmokeTest
from tests.web import factories
from tests.web.factories import PASSWORD

pytestmark = pytest.mark.django_db


# --- replays -------------------------------------------------------------------------------------------


def test_a_replay_starts_from_the_empty_board_and_describes_each_move(client, env, alice, bob):
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    duel = factories.duel(a, b, num_matches=1, initial_state=False)  # as the referee stores it
    match = duel.matches.get()
    assert len(match.states) == len(match.actions)
    data = client.get(reverse("web:api:match-replay", args=[match.pk])).json()
    game = environments.get_game("connect-four")
    assert data["states"][0] == game.initial_state()
    assert len(data["states"]) == len(data["actions"]) + 1
    assert data["states"][1:] == match.states  # states[i] follows actions[i - 1]
    first = data["moves"][0]
    assert first["player"] == "a" and first["action"] == match.actions[0]
    assert first["text"] == f"column {match.actions[0] + 1}"  # as the board labels columns
    second_seat = data["moves"][1]["seat"]
    assert second_seat == 1 and data["moves"][1]["player"] == "b"
    assert data["result_text"] in ("a won", "b won", "draw")


def test_older_replays_that_kept_the_initial_position_are_not_doubled(client, ranked):
    match = ranked["duels"][0].matches.first()
    assert len(match.states) == len(match.actions) + 1
    data = client.get(reverse("web:api:match-replay", args=[match.pk])).json()
    assert data["states"] == match.states


def test_the_replay_page_says_what_happened_without_javascript(client, env, alice, bob):
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    match = factories.duel(a, b, num_matches=1, initial_state=False).matches.get()
    html = client.get(reverse("web:match", args=[match.pk])).content.decode()
    noscript = re.search(r"<noscript>(.*?)</noscript>", html, re.S).group(1)
    assert "The board needs JavaScript." in noscript
    assert noscript.count("<li>") == len(match.actions)
    assert f'a: column {match.actions[0] + 1} <span class="muted">(action {match.actions[0]})' in noscript


# --- badges and status ---------------------------------------------------------------------------------


def test_a_failed_smoke_test_reads_failed_everywhere(client, alice, env):
    comp = factories.competitor(alice, env, "bad", state=Revision.State.TEST_FAILED)
    smoke = SmokeTest.objects.get(revision__competitor=comp)
    assert smoke.state == SmokeTest.State.SUCCEEDED and smoke.passed is False  # the job ran to the end
    html = client.get(reverse("web:competitor", args=[comp.pk])).content.decode()
    verdict = re.search(r'data-testid="smoke-verdict">(.*?)</td>', html, re.S).group(1)
    assert 'data-state="FAILED"' in verdict and ">failed<" in verdict and "succeeded" not in verdict
    client.force_login(alice)
    logs = client.get(reverse("web:api:revision-logs", args=[comp.revisions.get().pk])).json()
    assert logs["smoke_test_state"] == "FAILED" and logs["smoke_test_passed"] is False
    assert logs["smoke_test_job_state"] == "SUCCEEDED"


def test_a_passed_smoke_test_reads_passed(client, alice, env):
    comp = factories.competitor(alice, env, "good")
    html = client.get(reverse("web:competitor", args=[comp.pk])).content.decode()
    verdict = re.search(r'data-testid="smoke-verdict">(.*?)</td>', html, re.S).group(1)
    assert ">passed<" in verdict


@pytest.fixture
def cli_env(monkeypatch, tmp_path, live_server):
    monkeypatch.setenv("RL_ARENA_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("RL_ARENA_SERVER", live_server.url)
    monkeypatch.setenv("RL_ARENA_PASSWORD", PASSWORD)
    monkeypatch.delenv("RL_ARENA_TOKEN", raising=False)


def test_rl_arena_status_shows_a_paused_competitor_as_paused(cli_env, alice, env):
    comp = factories.competitor(alice, env, "sleepy")
    Competitor.objects.filter(pk=comp.pk).update(
        status=Competitor.Status.PAUSED, pause_reason="Paused automatically: it crashed in 3 duels"
    )
    out = io.StringIO()
    assert cli.main(["login", "--email", "alice@example.com"], out=out) == 0
    out = io.StringIO()
    assert cli.main(["status"], out=out) == 0
    lines = out.getvalue().splitlines()
    row = next(line for line in lines if "sleepy" in line)
    assert "PAUSED" in row and "ELIGIBLE" in row  # paused, although its latest upload is eligible
    assert "paused, it plays no duels: Paused automatically: it crashed in 3 duels" in out.getvalue()


def test_the_competitor_api_says_whether_it_plays_and_why_it_is_paused_to_its_owner(client, alice, env):
    comp = factories.competitor(alice, env, "sleepy")
    Competitor.objects.filter(pk=comp.pk).update(status=Competitor.Status.PAUSED, pause_reason="crashes")
    url = reverse("web:api:competitor-detail", args=[comp.pk])
    public = client.get(url).json()
    assert public["is_playing"] is False and public["pause_reason"] is None
    client.force_login(alice)
    assert client.get(url).json()["pause_reason"] == "crashes"


# --- failures ------------------------------------------------------------------------------------------


def test_a_smoke_test_traceback_keeps_its_indentation_in_a_monospace_block(client, alice, env):
    comp = factories.competitor(alice, env, "crashy", state=Revision.State.TEST_FAILED)
    rev = comp.revisions.get()
    Revision.objects.filter(pk=rev.pk).update(
        error_message=(
            "match 1 of 4: CRASH: PLAYER_1 raised RuntimeError at move 5:\n"
            "Traceback (most recent call last):\n"
            '  File "/agent/player.py", line 21, in step\n'
            "    raise RuntimeError('boom')\n"
            "RuntimeError: boom"
        )
    )
    client.force_login(alice)
    html = client.get(reverse("web:revision", args=[rev.pk])).content.decode()
    detail = re.search(r'data-testid="failure-detail">(.*?)</div>', html, re.S).group(1)
    assert (
        "<p>match 1 of 4: CRASH: PLAYER_1 raised RuntimeError at move 5 of the match (its 3rd move):</p>"
        in detail
    )
    assert '<pre class="code-error">Traceback (most recent call last):\n  File' in detail
    assert "\n    raise RuntimeError(&#x27;boom&#x27;)\n" in detail  # indentation kept


def test_build_logs_do_not_show_the_servers_folders(client, alice, env, settings):
    comp = factories.competitor(alice, env, "built")
    build = Build.objects.get(revision__competitor=comp)
    Build.objects.filter(pk=build.pk).update(
        log=f"extracted 2 files into {settings.DATA_DIR}/builds/{'ab12' * 16}\n"
        f"copied {settings.BASE_DIR}/run_duel/harness/arena_harness.py\n"
    )
    client.force_login(alice)
    html = client.get(reverse("web:revision", args=[comp.revisions.get().pk])).content.decode()
    assert "extracted 2 files into /agent" in html
    assert "copied run_duel/harness/arena_harness.py" in html
    assert str(settings.DATA_DIR) not in html and str(settings.BASE_DIR) not in html
    logs = client.get(reverse("web:api:revision-logs", args=[comp.revisions.get().pk])).json()
    assert str(settings.DATA_DIR) not in logs["build_log"]


# --- error pages, the API's front door, the token -------------------------------------------------------


def test_unknown_pages_get_the_sites_own_404(client, db):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert 'class="site-header"' in html and "Page not found" in html
    assert "/no/such/page/" in html and reverse("web:guide") in html


def test_server_errors_get_a_styled_500_page(db):
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    html = response.content.decode()
    assert 'class="site-header"' in html and "Something broke on our side" in html
    assert "/static/web/css/arena.css" in html


def test_the_api_root_lists_every_endpoint_and_the_upload_limit(client, db, settings):
    response = client.get("/api/")
    assert response.status_code == 200
    data = response.json()
    assert data["environments"].endswith("/api/environments/")
    assert data["duel_replays"].endswith("/api/duels/{id}/replays/")
    assert data["submission_max_bytes"] == settings.SUBMISSION_MAX_BYTES
    assert data["client"].endswith("/downloads/rl-arena-client.zip")
    html = client.get("/api/", HTTP_ACCEPT="text/html").content.decode()
    assert "Api Root" in html or "API" in html  # the browsable API: links to follow, forms to fill


def test_the_profile_shows_the_api_token_and_replaces_it(alice_client, alice, client):
    html = alice_client.get(reverse("web:profile")).content.decode()
    assert "You have no token yet." in html
    html = alice_client.post(reverse("web:token-rotate")).content.decode()
    old = re.search(r'data-testid="api-token-value">(rla_[A-Za-z0-9_-]{36})<', html).group(1)
    assert client.get("/api/revisions/", HTTP_AUTHORIZATION=f"Token {old}").status_code == 200
    response = alice_client.post(reverse("web:token-rotate"))
    assert response.status_code == 200  # the new key is on this page, and only here
    new = re.search(
        r'data-testid="api-token-value">(rla_[A-Za-z0-9_-]{36})<', response.content.decode()
    ).group(1)
    assert new != old
    assert client.get("/api/revisions/", HTTP_AUTHORIZATION=f"Token {old}").status_code == 401
    assert client.get("/api/revisions/", HTTP_AUTHORIZATION=f"Token {new}").status_code == 200


def test_replacing_the_token_needs_a_post(alice_client):
    assert alice_client.get(reverse("web:token-rotate")).status_code == 405


def test_duel_replays_api_gives_every_match_and_only_your_own_log(client, alice, bob, env):
    a, b = factories.competitor(alice, env, "a"), factories.competitor(bob, env, "b")
    duel = factories.duel(a, b, num_matches=3, initial_state=False)
    url = reverse("web:api:duel-replays", args=[duel.pk])
    data = client.get(url).json()
    assert [m["index"] for m in data["matches"]] == [0, 1, 2]
    assert all(len(m["states"]) == len(m["actions"]) + 1 for m in data["matches"])
    assert data["player_1_log"] is None and data["player_2_log"] is None
    client.force_login(alice)
    data = client.get(url).json()
    assert data["player_1_log"] == "player 1 says hello\n" and data["player_2_log"] is None
    assert Match.objects.filter(duel=duel).count() == 3
