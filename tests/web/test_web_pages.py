"""Every page renders, shows what it promises, and runs a bounded number of SQL queries."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Revision
from tests.web import factories

pytestmark = pytest.mark.django_db

# Upper bounds on SQL queries per page, whatever the number of competitors, duels or revisions.
MAX_QUERIES = {
    "home": 4,
    "game": 11,  # one of them: the board of the latest duel (web.game_boards.latest_boards)
    "leaderboard": 6,
    "competitor": 20,
    "revision": 8,
    "duel": 6,
    "match": 5,
}


def _rows(response):
    """The leaderboard rows a page rendered (the view passes them lazily)."""
    return response.context["board"]()["rows"]


def test_home_lists_games_with_counts_and_recent_activity(client, ranked, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_QUERIES["home"]):
        response = client.get(reverse("web:home"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Connect Four" in html
    assert "5 competitors" in html
    assert "10 duels" in html
    assert "alphabeta" in html  # in recent duels / uploads


def test_game_page_shows_rules_leaderboard_and_tournament(client, ranked, env, django_assert_max_num_queries):
    with django_assert_max_num_queries(MAX_QUERIES["game"]):
        response = client.get(reverse("web:game", args=[env.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<h2>Rules</h2>" in html or "Rules</h2>" in html  # Markdown rendered to HTML
    rows = [r.competitor for r in _rows(response)]
    assert rows == ["minimax", "random", "greedy", "mcts", "alphabeta"]
    assert "Edition 1" in html


def test_leaderboard_query_count_does_not_grow_with_competitors(
    client, env, bob, django_assert_max_num_queries
):
    for i in range(30):
        comp = factories.competitor(bob, env, f"bot-{i}")
        factories.rate(comp, 20 + i * 0.1, 2.0, history=0)
    with django_assert_max_num_queries(MAX_QUERIES["leaderboard"]):
        response = client.get(reverse("web:leaderboard", args=[env.slug]))
    assert response.status_code == 200
    assert response.content.decode().count("<tr>") == 31  # header + 30 rows


def test_leaderboard_ranks_by_conservative_skill_not_mean(client, env, bob):
    sure = factories.competitor(bob, env, "sure")
    factories.rate(sure, mu=26, sigma=1)  # 23
    lucky = factories.competitor(bob, env, "lucky")
    factories.rate(lucky, mu=30, sigma=4)  # 18
    response = client.get(reverse("web:leaderboard", args=[env.slug]))
    assert [r.competitor for r in _rows(response)] == ["sure", "lucky"]


def test_leaderboard_leaves_out_competitors_without_an_eligible_revision(client, env, bob):
    factories.competitor(bob, env, "broken", state=Revision.State.BUILD_FAILED)
    response = client.get(reverse("web:leaderboard", args=[env.slug]))
    assert _rows(response) == []
    assert "No ranked competitor yet" in response.content.decode()


def test_competitor_page_shows_revisions_chart_duels_and_head_to_head(
    client, ranked, django_assert_max_num_queries
):
    comp = ranked["competitors"][0]
    factories.revision(comp, state=Revision.State.TEST_FAILED)
    with django_assert_max_num_queries(MAX_QUERIES["competitor"]):
        response = client.get(reverse("web:competitor", args=[comp.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<svg" in html and "Rating over time" in html
    assert [h.opponent.name for h in response.context["head_to_head"]] == sorted(
        ["random", "greedy", "mcts", "alphabeta"]
    )
    assert len(response.context["history"]) == 4
    assert "v2" in html and "test failed" in html


def test_competitor_page_query_count_does_not_grow_with_revisions(
    client, ranked, django_assert_max_num_queries
):
    comp = ranked["competitors"][1]
    for _ in range(6):
        factories.revision(comp, state=Revision.State.BUILD_FAILED)
    with django_assert_max_num_queries(MAX_QUERIES["competitor"]):
        response = client.get(reverse("web:competitor", args=[comp.pk]))
    assert len(response.context["revision_rows"]) == 7


def test_revision_page_shows_progress_steps(client, env, bob, django_assert_max_num_queries):
    comp = factories.competitor(bob, env, "building", state=Revision.State.BUILDING)
    rev = comp.revisions.get()
    with django_assert_max_num_queries(MAX_QUERIES["revision"]):
        response = client.get(reverse("web:revision", args=[rev.pk]))
    html = response.content.decode()
    assert "Building the agent" in html
    assert 'hx-trigger="every 2s"' in html  # polls while not final


def test_final_revision_page_does_not_poll(client, ranked):
    rev = ranked["competitors"][0].current_revision
    html = client.get(reverse("web:revision", args=[rev.pk])).content.decode()
    assert "Ranked" in html
    assert "hx-trigger" not in html


def test_revision_status_partial_asks_htmx_to_reload_once_final(client, ranked):
    rev = ranked["competitors"][0].current_revision
    response = client.get(reverse("web:revision-status", args=[rev.pk]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert response["HX-Refresh"] == "true"


def test_revision_status_partial_keeps_polling_while_building(client, env, bob):
    rev = factories.competitor(bob, env, "b", state=Revision.State.TESTING).revisions.get()
    response = client.get(reverse("web:revision-status", args=[rev.pk]), HTTP_HX_REQUEST="true")
    assert not response.has_header("HX-Refresh")
    assert 'data-state="TESTING"' in response.content.decode()


def test_failed_build_points_owner_to_the_log_line(client, env, alice):
    rev = factories.competitor(alice, env, "nope", state=Revision.State.BUILD_FAILED).revisions.get()
    client.force_login(alice)
    html = client.get(reverse("web:revision", args=[rev.pk])).content.decode()
    assert "The build failed" in html
    assert "nosuchpackage" in html
    assert 'href="#build-L3"' in html  # the "ERROR: No matching distribution" line
    assert 'id="build-L3"' in html


def test_failed_smoke_test_points_owner_to_the_traceback_message(client, env, alice):
    rev = factories.competitor(alice, env, "bad", state=Revision.State.TEST_FAILED).revisions.get()
    client.force_login(alice)
    html = client.get(reverse("web:revision", args=[rev.pk])).content.decode()
    assert "The smoke test failed" in html
    assert 'href="#smoke-L3"' in html  # "ValueError: bad move", the end of the traceback


def test_duel_page_lists_matches(client, ranked, django_assert_max_num_queries):
    duel = ranked["duels"][0]
    with django_assert_max_num_queries(MAX_QUERIES["duel"]):
        response = client.get(reverse("web:duel", args=[duel.pk]))
    assert response.status_code == 200
    assert len(response.context["matches"]) == 2
    assert reverse("web:match", args=[duel.matches.first().pk]) in response.content.decode()


def test_match_page_embeds_replay_and_the_games_renderer(client, ranked, django_assert_max_num_queries):
    match = ranked["duels"][0].matches.first()
    with django_assert_max_num_queries(MAX_QUERIES["match"]):
        response = client.get(reverse("web:match", args=[match.pk]))
    html = response.content.decode()
    assert 'id="replay-data"' in html
    assert "games/connect-four/renderer.js" in html
    assert "web/js/replay.js" in html
    assert response.context["replay"]["states"] == match.states


def test_game_renderer_is_served_as_a_static_file():
    from django.contrib.staticfiles import finders

    assert finders.find("games/connect-four/renderer.js")
    assert finders.find("games/tic-tac-toe/renderer.js")
    assert not finders.find("games/connect-four/../../base.py")


def test_unknown_pages_are_404(client, db):
    assert client.get(reverse("web:game", args=["no-such-game"])).status_code == 404
    assert client.get(reverse("web:competitor", args=[999999])).status_code == 404
    assert client.get(reverse("web:match", args=[999999])).status_code == 404


def test_healthz_checks_the_database(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


def test_healthz_answers_a_probe_by_ip_before_other_middleware(client, db, django_assert_num_queries):
    with django_assert_num_queries(1):  # SELECT 1; no session, no user
        response = client.get("/healthz", HTTP_HOST="10.1.2.3")  # not in ALLOWED_HOSTS
    assert response.status_code == 200 and response.json()["status"] == "ok"
    assert "no-store" in response["Cache-Control"] and not response.cookies


def test_leaderboard_fragment_is_cached_until_ratings_change(client, env, bob, django_assert_max_num_queries):
    comp = factories.competitor(bob, env, "steady")
    rating = factories.rate(comp, 25, 2, history=0)
    url = reverse("web:leaderboard", args=[env.slug])
    client.get(url)
    with django_assert_max_num_queries(2):  # the game and the ratings version; the table comes from cache
        assert "steady" in client.get(url).content.decode()
    rating.set_skill(40, 1)
    rating.save()
    assert "37.00" in client.get(url).content.decode()


def test_game_page_shows_the_top_hundred_and_offers_the_rest(client, env, bob):
    for i in range(105):
        comp = factories.competitor(bob, env, f"bot-{i}")
        factories.rate(comp, 20 + i * 0.01, 2.0, history=0)
    html = client.get(reverse("web:leaderboard", args=[env.slug])).content.decode()
    assert html.count("<tr>") == 101
    assert "Show all 105 competitors" in html
    html = client.get(reverse("web:leaderboard", args=[env.slug]) + "?all=1").content.decode()
    assert html.count("<tr>") == 106


def test_a_paused_competitor_shows_why_to_its_owner_only(client, alice, alice_client, ranked):
    comp = next(c for c in ranked["competitors"] if c.owner_id == alice.pk)
    comp.status, comp.pause_reason = "PAUSED", "Paused automatically: revision 1 broke the rules <b>"
    comp.save(update_fields=["status", "pause_reason"])
    url = reverse("web:competitor", args=[comp.pk])
    owner_html = alice_client.get(url).content.decode()
    assert 'id="pause-reason"' in owner_html
    assert "revision 1 broke the rules &lt;b&gt;" in owner_html  # escaped
    client.logout()
    public_html = client.get(url).content.decode()
    assert "paused" in public_html and 'id="pause-reason"' not in public_html
