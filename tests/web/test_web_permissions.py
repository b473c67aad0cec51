"""Private sources and logs stay private; CSRF, upload caps and escaping protect every form."""

from __future__ import annotations

import hashlib

import pytest
from django.test import Client
from django.urls import reverse

from core.models import Revision
from tests.web import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def failed_revision(env, alice):
    """Alice's private revision whose build failed, with a build log."""
    return factories.competitor(alice, env, "secret", state=Revision.State.BUILD_FAILED).revisions.get()


def test_owner_sees_the_build_log(client, alice, failed_revision):
    client.force_login(alice)
    html = client.get(reverse("web:revision", args=[failed_revision.pk])).content.decode()
    assert "No matching distribution found" in html


def test_other_users_do_not_see_the_build_log_or_failure_details(client, bob, failed_revision):
    client.force_login(bob)
    html = client.get(reverse("web:revision", args=[failed_revision.pk])).content.decode()
    assert "No matching distribution found" not in html
    assert "nosuchpackage" not in html
    assert "visible to the owner only" in html


def test_anonymous_visitors_do_not_see_the_build_log(client, failed_revision):
    html = client.get(reverse("web:revision", args=[failed_revision.pk])).content.decode()
    assert "No matching distribution found" not in html


def test_staff_see_the_build_log(client, staff, failed_revision):
    client.force_login(staff)
    html = client.get(reverse("web:revision", args=[failed_revision.pk])).content.decode()
    assert "No matching distribution found" in html


def test_competitor_page_hides_logs_from_others(client, bob, failed_revision):
    client.force_login(bob)
    html = client.get(reverse("web:competitor", args=[failed_revision.competitor_id])).content.decode()
    assert "No matching distribution found" not in html


def test_duel_player_logs_are_shown_only_to_each_players_owner(client, ranked, alice, bob):
    duel = ranked["duels"][0]  # alice's minimax (player 1) vs bob's random (player 2)
    client.force_login(alice)
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    assert "player 1 says hello" in html
    assert "player 2 secret log" not in html
    client.force_login(bob)
    html = client.get(reverse("web:duel", args=[duel.pk])).content.decode()
    assert "player 1 says hello" not in html
    assert "player 2 secret log" in html


def _store_zip(revision: Revision) -> None:
    from django.conf import settings

    path = settings.DATA_DIR / revision.zip_path
    path.parent.mkdir(parents=True, exist_ok=True)
    content = b"PK\x05\x06" + b"\0" * 18
    path.write_bytes(content)
    # Served only when its bytes are the upload's (core.blobs.local_copy checks the sha256).
    Revision.objects.filter(pk=revision.pk).update(content_hash=hashlib.sha256(content).hexdigest())


def test_private_source_cannot_be_downloaded_by_others(client, bob, failed_revision):
    _store_zip(failed_revision)
    client.force_login(bob)
    assert client.get(reverse("web:revision-download", args=[failed_revision.pk])).status_code == 404


def test_private_source_can_be_downloaded_by_its_owner(client, alice, failed_revision):
    _store_zip(failed_revision)
    client.force_login(alice)
    response = client.get(reverse("web:revision-download", args=[failed_revision.pk]))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")


def test_public_source_can_be_downloaded_by_anyone(client, env, alice):
    rev = factories.competitor(alice, env, "open", is_public=True).revisions.get()
    _store_zip(rev)
    assert client.get(reverse("web:revision-download", args=[rev.pk])).status_code == 200


def test_upload_page_needs_login(client, db):
    response = client.get(reverse("web:upload"))
    assert response.status_code == 302
    assert reverse("web:login") in response["Location"]


def test_upload_cannot_be_prefilled_with_another_users_competitor(client, env, alice, bob):
    comp = factories.competitor(alice, env, "alices-bot")
    client.force_login(bob)
    html = client.get(reverse("web:upload") + f"?competitor={comp.pk}").content.decode()
    assert 'value="alices-bot"' not in html


def test_forms_require_a_csrf_token(alice, env):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(reverse("web:profile"), {"display_name": "Hacked", "team": "", "github": ""})
    assert response.status_code == 403
    response = client.post(reverse("web:upload"), {"environment": env.slug, "name": "x"})
    assert response.status_code == 403


def test_oversized_upload_is_refused_from_its_content_length(alice_client, settings):
    # The body is never read: the header alone decides, before CSRF or form parsing.
    response = alice_client.generic(
        "POST",
        reverse("web:upload"),
        data=b"",
        content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH=str(settings.SUBMISSION_MAX_BYTES * 2),
    )
    assert response.status_code == 413
    assert "too large" in response.content.decode()


def test_oversized_api_upload_gets_a_json_413(client, settings, db):
    response = client.generic(
        "POST",
        "/api/revisions/",
        data=b"",
        content_type="multipart/form-data; boundary=x",
        CONTENT_LENGTH=str(settings.SUBMISSION_MAX_BYTES * 2),
    )
    assert response.status_code == 413
    assert "too large" in response.json()["detail"]


def test_user_supplied_text_is_escaped(client, env, db):
    owner = factories.user(display_name="<script>alert(1)</script>", team="<b>team</b>")
    comp = factories.competitor(owner, env, "plain")
    factories.rate(comp, 25, 2, history=0)
    html = client.get(reverse("web:game", args=[env.slug])).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>team</b>" not in html


def test_game_rules_markdown_cannot_inject_scripts():
    from web.rendering import render_markdown

    html = render_markdown("# Rules\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) **bold**")
    assert "<script>" not in html
    assert "javascript:" not in html
    assert "<strong>bold</strong>" in html
    assert "<h1>Rules</h1>" in html
