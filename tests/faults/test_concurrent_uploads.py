"""40 uploads at once (10 users, 2 competitors each, 2 uploads per competitor), built and smoke-tested by
two real workers: every upload gets its own version, one build and one smoke test, and becomes ELIGIBLE
exactly once."""

from __future__ import annotations

import threading

import pytest
from core_testlib import wait_for, zip_player
from django.db import connection

from core.actions import submit_revision
from core.models import Build, Competitor, Revision, SmokeTest

pytestmark = [pytest.mark.slow, pytest.mark.redis]
USERS, COMPETITORS_PER_USER, UPLOADS_PER_COMPETITOR = 10, 2, 2


def test_40_concurrent_uploads_are_each_built_and_tested_exactly_once(start_worker, environments, make_user):
    users = [make_user() for _ in range(USERS)]
    for user in users:  # the competitors exist: every upload races for its competitor's next version
        for c in range(COMPETITORS_PER_USER):
            Competitor.objects.create(owner=user, environment=environments["tic-tac-toe"], name=f"bot-{c}")
    data = zip_player("random")
    jobs = [
        (user, f"bot-{c}")
        for user in users
        for c in range(COMPETITORS_PER_USER)
        for _ in range(UPLOADS_PER_COMPETITOR)
    ]
    assert len(jobs) == 40
    start_worker()
    start_worker()
    barrier = threading.Barrier(len(jobs))
    revisions: list[int] = []
    errors: list[BaseException] = []

    def upload(user, name: str) -> None:
        try:
            barrier.wait()
            revisions.append(submit_revision(user, "tic-tac-toe", name, data).pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=job) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(revisions) == 40
    final = {"ELIGIBLE", "BUILD_FAILED", "TEST_FAILED"}
    wait_for(
        lambda: Revision.objects.filter(pk__in=revisions, state__in=final).count() == 40,
        600,
        "every upload to be built and smoke-tested",
        interval=1.0,
    )
    assert Revision.objects.filter(pk__in=revisions, state="ELIGIBLE").count() == 40
    for competitor in Competitor.objects.all():
        versions = sorted(competitor.revisions.values_list("version", flat=True))
        assert versions == [1, 2], (competitor.name, versions)
    assert Build.objects.filter(revision__in=revisions).count() == 40
    assert Build.objects.filter(revision__in=revisions, state="SUCCEEDED", attempts=1).count() == 40
    assert SmokeTest.objects.filter(revision__in=revisions, passed=True, attempts=1).count() == 40
