"""The JSON API: token auth, games, leaderboards, competitors, revision upload and logs, duels, replays."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from core.models import Revision
from tests.web import factories
from tests.web.factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    """An anonymous API client."""
    return APIClient()


def _token(api, email="alice@example.com"):
    response = api.post("/api/auth/token/", {"email": email, "password": PASSWORD}, format="json")
    assert response.status_code == 200, response.content
    return response.json()["token"]


def test_token_is_issued_for_correct_credentials_only(api, alice):
    assert len(_token(api)) == 40
    bad = api.post("/api/auth/token/", {"email": "alice@example.com", "password": "no"}, format="json")
    assert bad.status_code == 400


def test_token_requests_are_rate_limited(api, alice):
    for _ in range(10):
        api.post("/api/auth/token/", {"email": "alice@example.com", "password": "no"}, format="json")
    response = api.post(
        "/api/auth/token/", {"email": "alice@example.com", "password": PASSWORD}, format="json"
    )
    assert response.status_code == 429


def test_environments_list(api, env):
    slugs = [e["slug"] for e in api.get("/api/environments/").json()]
    assert "connect-four" in slugs and "tic-tac-toe" in slugs


def test_leaderboard_is_ranked_by_conservative_skill(api, ranked, env, django_assert_max_num_queries):
    with django_assert_max_num_queries(5):
        rows = api.get(f"/api/environments/{env.slug}/leaderboard/").json()["results"]
    assert [r["competitor"] for r in rows] == ["minimax", "random", "greedy", "mcts", "alphabeta"]
    top = rows[0]
    assert top["rank"] == 1
    assert top["conservative_skill"] == pytest.approx(top["mu"] - 3 * top["sigma"])
    assert top["owner"] == "Alice" and "email" not in top


def test_my_competitors_need_authentication(api, ranked):
    assert api.get("/api/competitors/?mine=1").status_code in (401, 403)


def test_my_competitors_lists_only_mine(api, ranked, alice, django_assert_max_num_queries):
    api.credentials(HTTP_AUTHORIZATION="Token " + _token(api))
    with django_assert_max_num_queries(6):
        data = api.get("/api/competitors/?mine=1").json()
    assert sorted(c["name"] for c in data["results"]) == ["alphabeta", "greedy", "minimax"]
    assert all(c["latest_revision"]["state"] == "ELIGIBLE" for c in data["results"])
    assert data["results"][0]["rating"]["conservative"] is not None


def test_upload_a_revision_with_a_token(api, alice, env):
    api.credentials(HTTP_AUTHORIZATION="Token " + _token(api))
    upload = SimpleUploadedFile("bot.zip", zip_folder(EXAMPLES_DIR / "random"), "application/zip")
    response = api.post(
        "/api/revisions/",
        {"environment": env.slug, "competitor_name": "api-bot", "file": upload, "is_public": "true"},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["competitor"], body["version"], body["state"], body["is_public"]) == (
        "api-bot",
        1,
        "UPLOADED",
        True,
    )
    assert api.get(f"/api/revisions/{body['id']}/").json()["state"] == "UPLOADED"


def test_upload_refusal_explains_the_problem(api, alice, env):
    api.credentials(HTTP_AUTHORIZATION="Token " + _token(api))
    upload = SimpleUploadedFile("bot.zip", b"PK not really a zip", "application/zip")
    response = api.post(
        "/api/revisions/",
        {"environment": env.slug, "competitor_name": "x", "file": upload},
        format="multipart",
    )
    assert response.status_code == 400
    assert "file" in response.json()


def test_anonymous_upload_is_refused(api, env):
    upload = SimpleUploadedFile("bot.zip", zip_folder(EXAMPLES_DIR / "random"), "application/zip")
    response = api.post(
        "/api/revisions/",
        {"environment": env.slug, "competitor_name": "x", "file": upload},
        format="multipart",
    )
    assert response.status_code in (401, 403)
    assert not Revision.objects.exists()


def test_revision_failure_and_logs_are_for_the_owner_only(api, env, alice, bob):
    rev = factories.competitor(alice, env, "oops", state=Revision.State.BUILD_FAILED).revisions.get()
    api.credentials(HTTP_AUTHORIZATION="Token " + _token(api, "bob@example.com"))
    assert api.get(f"/api/revisions/{rev.pk}/").json()["failure"] is None
    assert api.get(f"/api/revisions/{rev.pk}/logs/").status_code == 404
    api.credentials(HTTP_AUTHORIZATION="Token " + _token(api, "alice@example.com"))
    assert "nosuchpackage" in api.get(f"/api/revisions/{rev.pk}/").json()["failure"]
    logs = api.get(f"/api/revisions/{rev.pk}/logs/").json()
    assert "No matching distribution" in logs["build_log"]


def test_duel_detail_lists_matches_with_replay_links(api, ranked, django_assert_max_num_queries):
    duel = ranked["duels"][0]
    with django_assert_max_num_queries(3):
        data = api.get(f"/api/duels/{duel.pk}/").json()
    assert data["player_1"]["competitor"] == "minimax"
    assert len(data["matches"]) == 2
    assert data["matches"][0]["replay_url"].endswith(f"/api/matches/{data['matches'][0]['id']}/replay/")


def test_duel_list_filters_by_competitor(api, ranked):
    comp = ranked["competitors"][4]
    data = api.get(f"/api/duels/?competitor={comp.pk}").json()
    assert data["count"] == 4


def test_match_replay_has_states_actions_and_times(api, ranked, django_assert_max_num_queries):
    match = ranked["duels"][0].matches.first()
    with django_assert_max_num_queries(1):
        data = api.get(f"/api/matches/{match.pk}/replay/").json()
    assert data["states"] == match.states
    assert len(data["actions"]) == len(data["states"]) - 1 == len(data["move_times"])
    assert data["environment"] == "connect-four"


def test_openapi_schema_describes_the_api(api, db):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    text = response.content.decode()
    for path in ("/api/environments/{slug}/leaderboard/", "/api/revisions/", "/api/matches/{id}/replay/"):
        assert path in text
