"""autoscaler.queue.read_queue_snapshot against the real database (Postgres in CI, SQLite otherwise)."""

from __future__ import annotations

import os
from datetime import timedelta

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django
import pytest

django.setup()

from deploy_helpers import REPO  # noqa: E402
from django.utils import timezone  # noqa: E402

from autoscaler.queue import read_queue_snapshot  # noqa: E402

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_uploads() -> list:
    """Two uploaded revisions, i.e. two QUEUED builds (hints are sent on commit: never, in these tests)."""
    from core.actions import submit_revision
    from core.actions.environments import sync_environments
    from core.management.commands.load_example_players import zip_folder
    from core.management.commands.sync_environments import game_infos
    from core.models import User

    sync_environments(game_infos())
    user = User.objects.create_user(email="scaler@example.com", password=None)
    data = zip_folder(REPO / "example_players" / "random")
    return [submit_revision(user, "tic-tac-toe", name, data) for name in ("first", "second")]


def test_queued_builds_are_counted_with_the_oldest_wait(two_uploads: list) -> None:
    from core.models import Build

    Build.objects.filter(revision=two_uploads[0]).update(enqueued_at=timezone.now() - timedelta(seconds=120))
    snapshot = read_queue_snapshot()
    assert (snapshot.queued, snapshot.running) == (2, 0)
    assert snapshot.oldest_wait_s is not None and snapshot.oldest_wait_s >= 119


def test_running_jobs_count_only_under_a_live_lease(two_uploads: list) -> None:
    from core.models import Build

    now = timezone.now()
    Build.objects.filter(revision=two_uploads[0]).update(
        state="RUNNING", worker="worker-7:4242", lease_expires_at=now + timedelta(seconds=60)
    )
    Build.objects.filter(revision=two_uploads[1]).update(
        state="RUNNING", worker="worker-8:99", lease_expires_at=now - timedelta(seconds=5)
    )
    snapshot = read_queue_snapshot()
    assert (snapshot.queued, snapshot.running, snapshot.oldest_wait_s) == (0, 1, None)
    assert snapshot.busy_claimers == {"worker-7:4242"}
