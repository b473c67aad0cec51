"""Operators' endpoints: /metrics behind its token, with the arena's own measures; /readyz names failures."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import Duel, WorkerStatus
from tests.web import factories

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-metrics-token"


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text exposition."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    prefix = f"{name}{{{want}}} " if labels else f"{name} "
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line.split()[-1])
    raise AssertionError(f"no sample {prefix!r} in:\n{text}")


def _scrape(client) -> str:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def test_metrics_do_not_exist_without_a_token_setting(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 404


def test_metrics_refuse_a_wrong_or_missing_token(client, settings):
    settings.METRICS_TOKEN = TOKEN
    assert client.get("/metrics").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer nope").status_code == 404
    assert client.get("/metrics", HTTP_AUTHORIZATION=TOKEN).status_code == 404


def test_metrics_follow_jobs_results_ratings_and_workers(client, settings, env, alice, bob):
    settings.METRICS_TOKEN = TOKEN
    a = factories.competitor(alice, env, "a")
    b = factories.competitor(bob, env, "b")
    before = _scrape(client)
    assert _sample(before, "rl_arena_jobs", kind="duel", state="queued") == 0
    assert _sample(before, "rl_arena_rating_backlog", game="connect-four") == 0

    queued = Duel.objects.create(
        environment=env, revision_1=a.current_revision, revision_2=b.current_revision
    )
    Duel.objects.filter(pk=queued.pk).update(created_at=timezone.now() - timedelta(seconds=90))
    finished = factories.duel(a, b, num_matches=2, finished_ago_s=5)
    Duel.objects.filter(pk=finished.pk).update(started_at=finished.finished_at - timedelta(seconds=3))
    factories.error_duel(a, b, erring=2, kind="TIMEOUT", num_matches=2)
    WorkerStatus.objects.create(
        name="w1@host", healthy=True, slots=3, last_seen=timezone.now(), changed_at=timezone.now()
    )
    WorkerStatus.objects.create(
        name="w2@host",
        healthy=False,
        problem="docker down",
        last_seen=timezone.now(),
        changed_at=timezone.now(),
    )

    after = _scrape(client)
    assert _sample(after, "rl_arena_jobs", kind="duel", state="queued") == 1
    assert _sample(after, "rl_arena_oldest_queued_job_age_seconds", kind="duel") >= 89
    assert _sample(after, "rl_arena_rating_backlog", game="connect-four") == 2
    assert _sample(after, "rl_arena_duels_recorded_per_second", game="connect-four") > 0
    assert _sample(
        after, "rl_arena_duel_duration_seconds", game="connect-four", quantile="0.5"
    ) == pytest.approx(3)
    assert _sample(after, "rl_arena_match_errors", game="connect-four", kind="TIMEOUT") == 2
    assert _sample(after, "rl_arena_workers", health="healthy") == 1
    assert _sample(after, "rl_arena_workers", health="unhealthy") == 1
    assert _sample(after, "rl_arena_worker_slots", health="healthy") == 3
    assert _sample(after, "rl_arena_worker_free_slots") == 3  # no job running
    assert _sample(after, "rl_arena_data_dir_free_bytes") > 0

    factories.rate_duel(finished, {a: (26.0, 7.0), b: (24.0, 7.0)})
    rated = _scrape(client)
    assert _sample(rated, "rl_arena_rating_backlog", game="connect-four") == 1
    assert _sample(rated, "rl_arena_duels_rated_per_second", game="connect-four") > 0


def test_a_worker_that_stopped_reporting_is_stale_not_healthy(client, settings):
    settings.METRICS_TOKEN = TOKEN
    long_ago = timezone.now() - timedelta(minutes=10)
    WorkerStatus.objects.create(name="gone@host", healthy=True, last_seen=long_ago, changed_at=long_ago)
    text = _scrape(client)
    assert _sample(text, "rl_arena_workers", health="healthy") == 0
    assert _sample(text, "rl_arena_workers", health="stale") == 1


def test_readyz_names_the_failed_checks_and_gives_reasons_only_with_the_token(client, settings):
    settings.METRICS_TOKEN = TOKEN
    settings.AGENT_REGISTRY = ""
    response = client.get("/readyz")
    assert response.status_code == 503  # no worker ever reported
    body = response.json()
    assert body["checks"]["workers"] == "failed"
    assert body["checks"]["database"] == "ok"
    assert "problems" not in body
    detailed = client.get("/readyz", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    assert "no worker reported" in detailed["problems"]["workers"]

    now = timezone.now()
    WorkerStatus.objects.create(name="w@host", healthy=True, last_seen=now, changed_at=now)
    ok = client.get("/readyz")
    assert ok.status_code == 200, ok.json()
    assert ok.json() == {"status": "ok", "checks": dict.fromkeys(ok.json()["checks"], "ok")}


def test_readyz_fails_on_a_full_disk_and_an_unreachable_registry(client, settings):
    now = timezone.now()
    WorkerStatus.objects.create(name="w@host", healthy=True, last_seen=now, changed_at=now)
    settings.READYZ_MIN_FREE_MB = 1 << 40  # more than any disk has
    settings.AGENT_REGISTRY = "127.0.0.1:9"  # nothing listens on the discard port
    body = client.get("/readyz").json()
    assert body["checks"]["disk"] == "failed"
    assert body["checks"]["registry"] == "failed"
    assert body["checks"]["workers"] == "ok"
