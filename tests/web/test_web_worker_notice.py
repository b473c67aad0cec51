"""When no worker is there, the upload page and a waiting revision's page say so, in plain words that
name no worker; once a healthy worker reports, the notice goes (after its short cache)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from core.models import Revision, WorkerStatus
from tests.web import factories
from web.worker_notice import NOTICE

pytestmark = pytest.mark.django_db


def test_the_upload_page_and_a_waiting_revision_say_no_worker_is_there(alice_client, alice, env):
    WorkerStatus.objects.create(
        name="secret-host@10.0.0.7",
        healthy=False,
        problem="docker down",
        last_seen=timezone.now(),
        changed_at=timezone.now(),
    )
    comp = factories.competitor(alice, env, "waiting", state=Revision.State.UPLOADED)
    revision = comp.revisions.get()
    for url in (reverse("web:upload"), reverse("web:revision", args=[revision.pk])):
        html = alice_client.get(url).content.decode()
        assert NOTICE in html, url
        assert "secret-host" not in html and "docker down" not in html

    WorkerStatus.objects.update(healthy=True, last_seen=timezone.now())
    cache.clear()  # the notice is cached a few seconds
    for url in (reverse("web:upload"), reverse("web:revision", args=[revision.pk])):
        assert NOTICE not in alice_client.get(url).content.decode(), url


def test_a_finished_revision_shows_no_worker_notice(alice_client, alice, env):
    comp = factories.competitor(alice, env, "done")
    html = alice_client.get(reverse("web:revision", args=[comp.current_revision.pk])).content.decode()
    assert NOTICE not in html
