"""The upload page: a valid zip becomes a queued revision; every refusal is shown next to its field."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from core.models import Build, Competitor, Revision
from tests.zips import zip_bytes

pytestmark = pytest.mark.django_db


def _post(client, env, name="my-bot", data=None, filename="bot.zip", public=False):
    payload = {
        "environment": env.slug,
        "name": name,
        "file": SimpleUploadedFile(filename, data or zip_folder(EXAMPLES_DIR / "random"), "application/zip"),
    }
    if public:
        payload["is_public"] = "on"
    return client.post(reverse("web:upload"), payload)


def test_upload_creates_a_competitor_and_queues_the_build(alice_client, alice, env):
    response = _post(alice_client, env, public=True)
    rev = Revision.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("web:revision", args=[rev.pk])
    assert (rev.competitor.owner, rev.competitor.name, rev.version, rev.is_public) == (
        alice,
        "my-bot",
        1,
        True,
    )
    assert Build.objects.filter(revision=rev, state=Build.State.QUEUED).exists()


def test_uploading_the_same_name_again_adds_a_revision(alice_client, env):
    _post(alice_client, env)
    _post(alice_client, env)
    comp = Competitor.objects.get()
    assert list(comp.revisions.order_by("version").values_list("version", flat=True)) == [1, 2]


def test_the_same_name_as_another_users_competitor_creates_your_own(client, alice, bob, env):
    client.force_login(alice)
    _post(client, env, name="shared")
    client.force_login(bob)
    _post(client, env, name="shared")
    assert sorted(Competitor.objects.values_list("owner__email", flat=True)) == [
        "alice@example.com",
        "bob@example.com",
    ]
    assert all(c.revisions.count() == 1 for c in Competitor.objects.all())


def test_a_file_that_is_not_a_zip_is_refused_next_to_the_file_field(alice_client, env):
    response = _post(alice_client, env, data=b"print('hello')", filename="player.py")
    assert response.status_code == 400
    assert "not a zip file" in str(response.context["form"].errors["file"])
    assert not Revision.objects.exists()


def test_a_zip_without_player_py_is_refused_with_the_validators_reason(alice_client, env):
    response = _post(alice_client, env, data=zip_bytes({"agent.py": "x = 1\n"}))
    assert response.status_code == 400
    assert "player.py" in str(response.context["form"].errors["file"])
    assert not Competitor.objects.exists()


def test_a_bad_competitor_name_is_refused_next_to_the_name_field(alice_client, env):
    response = _post(alice_client, env, name="no spaces/allowed")
    assert response.status_code == 400
    assert "name" in response.context["form"].errors


def test_uploads_are_rate_limited(alice_client, env, settings):
    settings.RL_ARENA_RATE_LIMITS = {"upload": (2, 3600)}
    assert _post(alice_client, env).status_code == 302
    assert _post(alice_client, env).status_code == 302
    response = _post(alice_client, env)
    assert response.status_code == 429
    assert Revision.objects.count() == 2


def test_upload_page_offers_your_competitor_names(alice_client, alice, env):
    _post(alice_client, env, name="first-bot")
    html = alice_client.get(reverse("web:upload")).content.decode()
    assert '<option value="first-bot">' in html
