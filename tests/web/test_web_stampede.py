"""After a rating change, concurrent anonymous requests rebuild the ranking (and each cached page) once:
one request per cache entry rebuilds, the others wait for it or serve the previous version marked stale.

Real Redis cache (``TEST_REDIS_URL``), committed rows (threads use their own database connections).
The ranking builder is gated until every request has either started a rebuild or found one running, so
without the single-flight lock all of them would be inside the builder at once (no timing involved).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections
from django.test import Client
from django.urls import reverse

from core.models import Rating
from web import page_cache, queries

pytestmark = pytest.mark.django_db(transaction=True)

REQUESTS = 16
REDIS_URL = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/14")


@pytest.fixture
def redis_cache(settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    from django.core.cache import cache

    cache.clear()
    yield cache
    cache.clear()


@pytest.fixture
def gated_builder(monkeypatch):
    """``queries.leaderboard`` (the real one) held until all ``REQUESTS`` rebuilt or found a rebuild."""
    real = queries.leaderboard

    def gated(environment):
        for _ in range(6000):  # a safety net against a hang, not a timing assumption
            if sum(page_cache.builds.values()) + sum(page_cache.waits.values()) >= REQUESTS:
                break
            time.sleep(0.005)
        return real(environment)

    monkeypatch.setattr(queries, "leaderboard", gated)


def _fire(urls: list[str]) -> list:
    def get(url: str):
        try:
            return Client().get(url)
        finally:
            connections.close_all()

    page_cache.builds.clear()
    page_cache.waits.clear()
    with ThreadPoolExecutor(len(urls)) as pool:
        return list(pool.map(get, urls))


def _change_rating(comp, mu: float, sigma: float) -> None:
    rating = Rating.objects.get(competitor=comp)
    rating.set_skill(mu, sigma)
    rating.save()


def test_concurrent_requests_after_a_rating_change_rebuild_the_ranking_once(
    ranked, env, redis_cache, gated_builder
):
    api = f"/api/environments/{env.slug}/leaderboard/?limit=3"
    game = reverse("web:game", args=[env.slug])
    urls = [api] * (REQUESTS // 2) + [game] * (REQUESTS // 2)

    # Cold cache: one build each, and every request waits for it (nothing older to serve).
    cold = _fire(urls)
    assert page_cache.builds == {"leaderboard-rows": 1, "page:game": 1}
    assert all(r.status_code == 200 and r["Cache-Control"] == "public, max-age=5" for r in cold)
    assert len({r.json()["version"] for r in cold[: REQUESTS // 2]}) == 1
    old_version = cold[0].json()["version"]

    _change_rating(ranked["competitors"][4], 80.77, 1.0)  # alphabeta to the top, skill 77.77
    warm = _fire(urls)
    assert page_cache.builds == {"leaderboard-rows": 1, "page:game": 1}
    assert all(r.status_code == 200 for r in warm)
    fresh_json = [r for r in warm[: REQUESTS // 2] if r.json()["version"] != old_version]
    stale_json = [r for r in warm[: REQUESTS // 2] if r.json()["version"] == old_version]
    assert fresh_json and all(r.json()["results"][0]["competitor"] == "alphabeta" for r in fresh_json)
    assert all(r["Cache-Control"] == "public, max-age=1" for r in stale_json)
    stale_pages = [r for r in warm[REQUESTS // 2 :] if "77.77" not in r.content.decode()]
    assert all(r["Cache-Control"] == "public, max-age=1" for r in stale_pages)
    assert len(stale_pages) < REQUESTS // 2

    # The next request shows the new ranking, from the cache.
    after = Client().get(api).json()
    assert after["version"] != old_version and after["results"][0]["competitor"] == "alphabeta"
    assert "77.77" in Client().get(game).content.decode()
    assert page_cache.builds == {"leaderboard-rows": 1, "page:game": 1}
