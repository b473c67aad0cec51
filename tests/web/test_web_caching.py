"""Public pages cost what they show: the leaderboard JSON in pages with ETags, the game and competitor pages
served from the cache to anonymous visitors, and every one of them current as soon as a rating changes."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from core.models import Rating
from tests.web import factories

pytestmark = pytest.mark.django_db

#: SQL queries of an anonymous page served from the cache: the version query, nothing else.
CACHED_QUERIES = 1


def _leaderboard_url(env, **params) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/api/environments/{env.slug}/leaderboard/" + (f"?{query}" if query else "")


def _change_rating(comp, mu: float, sigma: float) -> None:
    """What a rating run does to a competitor's row (``updated_at`` moves with it)."""
    rating = Rating.objects.get(competitor=comp)
    rating.set_skill(mu, sigma)
    rating.save()


def test_leaderboard_json_is_paged_with_limit_and_offset(ranked, env):
    api = APIClient()
    first = api.get(_leaderboard_url(env, limit=2)).json()
    assert first["count"] == 5
    assert [r["competitor"] for r in first["results"]] == ["minimax", "random"]
    assert first["previous"] is None and first["next"].endswith("?limit=2&offset=2")
    last = api.get(first["next"].replace("offset=2", "offset=4")).json()
    assert [r["competitor"] for r in last["results"]] == ["alphabeta"]
    assert last["next"] is None and last["previous"].endswith("?limit=2&offset=2")
    default = api.get(_leaderboard_url(env)).json()
    assert len(default["results"]) == 5 and default["version"] == first["version"]
    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"limit": "x"}):
        assert api.get(_leaderboard_url(env, **bad)).status_code == 400, bad


def test_leaderboard_json_answers_304_to_its_etag_until_a_rating_changes(
    ranked, env, django_assert_num_queries
):
    api = APIClient()
    response = api.get(_leaderboard_url(env, limit=3))
    etag = response["ETag"]
    assert response["Cache-Control"] == "public, max-age=5"
    with django_assert_num_queries(CACHED_QUERIES):
        again = api.get(_leaderboard_url(env, limit=3), HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag
    _change_rating(ranked["competitors"][4], 60.0, 1.0)  # alphabeta jumps to the top
    changed = api.get(_leaderboard_url(env, limit=3), HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
    assert changed.json()["results"][0]["competitor"] == "alphabeta"


def test_leaderboard_json_queries_do_not_grow_with_the_number_of_competitors(
    ranked, env, alice, django_assert_num_queries
):
    api = APIClient()
    for i in range(30):
        factories.rate(factories.competitor(alice, env, f"extra-{i}"), 20.0 + i / 10, 3.0, history=0)
    with django_assert_num_queries(3):  # the version, the game, the ranking (one query for every row)
        cold = api.get(_leaderboard_url(env, limit=10))
    assert cold.json()["count"] == 35
    with django_assert_num_queries(CACHED_QUERIES):
        warm = api.get(_leaderboard_url(env, limit=10, offset=10))
    assert len(warm.json()["results"]) == 10


@pytest.mark.parametrize("page", ["game", "competitor"])
def test_anonymous_pages_come_from_the_cache_and_show_a_rating_change_on_the_next_request(
    client, ranked, env, page, django_assert_num_queries, django_assert_max_num_queries
):
    comp = ranked["competitors"][1]
    url = (
        reverse("web:game", args=[env.slug]) if page == "game" else reverse("web:competitor", args=[comp.pk])
    )
    with django_assert_max_num_queries(20):
        first = client.get(url)
    assert first.status_code == 200
    assert first["Cache-Control"] == "public, max-age=5" and not first.cookies
    with django_assert_num_queries(CACHED_QUERIES):
        second = client.get(url)
    assert second.content == first.content and second["ETag"] == first["ETag"]
    with django_assert_num_queries(CACHED_QUERIES):
        assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    assert "77.77" not in first.content.decode()
    _change_rating(comp, 80.77, 1.0)  # skill 77.77
    with django_assert_max_num_queries(20):
        third = client.get(url)
    assert "77.77" in third.content.decode() and third["ETag"] != first["ETag"]


def test_signed_in_pages_are_rendered_for_the_viewer_and_kept_private(ranked, env, alice):
    from django.test import Client

    anonymous, signed_in = Client(), Client()
    signed_in.force_login(alice)
    url = reverse("web:game", args=[env.slug])
    anonymous.get(url)  # fills the cache
    response = signed_in.get(url)
    assert "Alice" in response.content.decode() and "Log out" in response.content.decode()
    assert "private" in response["Cache-Control"]
    assert "Log out" not in anonymous.get(url).content.decode()


def test_head_to_head_reads_the_pair_counts_the_results_added(client, ranked):
    comp = ranked["competitors"][0]
    other = ranked["competitors"][1]
    factories.error_duel(comp, other, erring=2, num_matches=3)  # other crashed three times
    rows = {
        h.opponent.pk: h
        for h in client.get(reverse("web:competitor", args=[comp.pk])).context["head_to_head"]
    }
    assert rows[other.pk].duels == 2
    assert rows[other.pk].opponent_errors == 3
    assert rows[other.pk].matches == 2 + 3


def test_leaderboard_json_is_the_same_for_signed_in_clients_and_browsers_get_the_browsable_api(
    ranked, env, alice
):
    anonymous, signed_in = APIClient(), APIClient()
    signed_in.force_login(alice)
    url = _leaderboard_url(env, limit=2, offset=1)
    assert signed_in.get(url).json() == anonymous.get(url).json()
    assert "private" not in anonymous.get(url)["Cache-Control"]
    html = anonymous.get(url, HTTP_ACCEPT="text/html")
    assert html.status_code == 200 and html["Content-Type"].startswith("text/html")
    assert "greedy" in html.content.decode()  # offset 1, limit 2: random and greedy
    assert anonymous.get(_leaderboard_url(env, limit=0), HTTP_ACCEPT="text/html").status_code == 400
