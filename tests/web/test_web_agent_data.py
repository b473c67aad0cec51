"""A competitor's data folder on the site and the API: shown, downloaded and reset by its owner (staff may
look), invisible to everyone else and never in the page cached for anonymous visitors; the upload's
"empty data folder" box; the guide."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from core.actions.api_tokens import create_api_token
from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from core.models import Competitor, Revision, StoredAgentData
from run_duel.agent_data import archive_of, files_of
from tests.web import factories

pytestmark = pytest.mark.django_db

SECRET = b"opponent 7 always opens in the centre"


@pytest.fixture
def comp(alice, env) -> Competitor:
    """Alice's competitor, whose folder a duel saved (as ``core.actions.save_agent_data`` leaves it)."""
    mine = factories.competitor(alice, env, "memory-bot")
    other = factories.competitor(factories.user(), env, "sparring")
    duel = factories.duel(mine, other, num_matches=2)
    StoredAgentData.objects.create(
        competitor=mine,
        archive=archive_of({"notes/openings.txt": SECRET, "stats.json": b"{}"}),
        size_bytes=len(SECRET) + 2,
        files=2,
        generation=3,
        updated_at=timezone.now(),
        updated_by_duel=duel,
        last_problem="duel 12: your agent was not running at the end of the duel",
        last_problem_at=timezone.now(),
    )
    return mine


def _client(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _api(user=None) -> APIClient:
    api = APIClient()
    if user is not None:
        key, _token = create_api_token(user, label="test")
        api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api


# --- the competitor page ---------------------------------------------------------------------------------


def test_the_owner_sees_the_stored_data_with_download_and_reset(comp, alice):
    page = _client(alice).get(reverse("web:competitor", args=[comp.pk]))
    html = page.content.decode()
    assert 'data-testid="stored-data"' in html and "Stored data" in html
    assert "of 10.0\xa0MB" in html
    assert reverse("web:agent-data-download", args=[comp.pk]) in html
    assert reverse("web:agent-data-reset", args=[comp.pk]) in html
    assert f"duel #{comp.agent_data.updated_by_duel_id}" in html
    assert "your agent was not running at the end of the duel" in html
    assert "private" in page["Cache-Control"]


def test_staff_see_the_stored_data_but_no_reset(comp, staff):
    html = _client(staff).get(reverse("web:competitor", args=[comp.pk])).content.decode()
    assert 'data-testid="stored-data"' in html
    assert reverse("web:agent-data-download", args=[comp.pk]) in html
    assert reverse("web:agent-data-reset", args=[comp.pk]) not in html


@pytest.mark.parametrize("viewer", ["anonymous", "bob"])
def test_nobody_else_sees_the_stored_data(comp, bob, viewer):
    html = _client(bob if viewer == "bob" else None).get(reverse("web:competitor", args=[comp.pk])).content
    for trace in (b"stored-data", b"Stored data", b"data.tar", b"/data/reset/", b"not running at the end"):
        assert trace not in html


def test_the_cached_public_page_never_holds_the_owners_section(comp, alice):
    url = reverse("web:competitor", args=[comp.pk])
    owner = _client(alice)
    assert b"stored-data" in owner.get(url).content  # the owner's view first: must not be cached
    anonymous = Client()
    first = anonymous.get(url)
    assert "public" in first["Cache-Control"] and b"stored-data" not in first.content
    assert b"stored-data" in owner.get(url).content  # and the cached page does not reach the owner
    again = anonymous.get(url)
    assert again.content == first.content and b"stored-data" not in again.content


def test_a_competitor_without_data_shows_an_empty_folder(alice, env):
    fresh = factories.competitor(alice, env, "fresh")
    html = _client(alice).get(reverse("web:competitor", args=[fresh.pk])).content.decode()
    assert 'data-testid="stored-data"' in html and "never" in html


# --- download --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "staff"])
def test_the_owner_and_staff_download_the_folder_as_a_tar(comp, alice, staff, who):
    response = _client(alice if who == "alice" else staff).get(
        reverse("web:agent-data-download", args=[comp.pk])
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-tar"
    assert response["Content-Disposition"] == 'attachment; filename="memory-bot-data.tar"'
    assert "no-store" in response["Cache-Control"]
    assert files_of(response.content) == {"notes/openings.txt": SECRET, "stats.json": b"{}"}


@pytest.mark.parametrize("who", ["anonymous", "bob"])
def test_nobody_else_can_download_the_folder(comp, bob, who):
    response = _client(bob if who == "bob" else None).get(reverse("web:agent-data-download", args=[comp.pk]))
    assert response.status_code == 404
    assert SECRET not in response.content


def test_an_empty_folder_downloads_as_a_valid_empty_tar(alice, env):
    fresh = factories.competitor(alice, env, "fresh")
    response = _client(alice).get(reverse("web:agent-data-download", args=[fresh.pk]))
    assert response.status_code == 200 and files_of(response.content) == {}


# --- reset -----------------------------------------------------------------------------------------------


def test_the_owner_resets_the_folder_with_a_confirmed_post(comp, alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    url = reverse("web:agent-data-reset", args=[comp.pk])
    assert client.post(url, {"confirm": "yes"}).status_code == 403  # no CSRF token
    page = client.get(reverse("web:competitor", args=[comp.pk]))
    token = page.cookies["csrftoken"].value
    assert client.get(url).status_code == 405

    unconfirmed = client.post(url, {"csrfmiddlewaretoken": token}, follow=True)
    assert "Tick the box" in unconfirmed.content.decode()
    assert StoredAgentData.objects.get(pk=comp.pk).generation == 3

    response = client.post(url, {"csrfmiddlewaretoken": token, "confirm": "yes"})
    assert response.status_code == 302
    assert response["Location"] == reverse("web:competitor", args=[comp.pk]) + "#data"
    row = StoredAgentData.objects.get(pk=comp.pk)
    assert (bytes(row.archive), row.files, row.size_bytes, row.generation, row.last_problem) == (
        b"",
        0,
        0,
        4,
        "",
    )
    shown = client.get(response["Location"]).content.decode()
    assert "is now empty" in shown and "(emptied)" in shown


@pytest.mark.parametrize("who", ["bob", "staff"])
def test_only_the_owner_may_reset(comp, bob, staff, who):
    response = _client(bob if who == "bob" else staff).post(
        reverse("web:agent-data-reset", args=[comp.pk]), {"confirm": "yes"}
    )
    assert response.status_code == 404
    assert StoredAgentData.objects.get(pk=comp.pk).generation == 3


def test_an_anonymous_reset_is_sent_to_log_in(comp):
    response = Client().post(reverse("web:agent-data-reset", args=[comp.pk]), {"confirm": "yes"})
    assert response.status_code == 302 and reverse("web:login") in response["Location"]
    assert StoredAgentData.objects.get(pk=comp.pk).generation == 3


# --- upload ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ticked", [True, False])
def test_the_upload_box_starts_the_revision_with_an_empty_folder(alice, env, ticked):
    client = _client(alice)
    form = client.get(reverse("web:upload")).content.decode()
    assert "Start this revision with an empty data folder" in form
    payload = {
        "environment": env.slug,
        "name": "memory-bot",
        "file": SimpleUploadedFile("bot.zip", zip_folder(EXAMPLES_DIR / "random"), "application/zip"),
    }
    if ticked:
        payload["wipe_data"] = "on"
    assert client.post(reverse("web:upload"), payload).status_code == 302
    assert Revision.objects.get(competitor__name="memory-bot").wipe_data is ticked


def test_the_api_upload_takes_wipe_data(alice, env):
    upload = SimpleUploadedFile("bot.zip", zip_folder(EXAMPLES_DIR / "random"), "application/zip")
    response = _api(alice).post(
        "/api/revisions/",
        {"environment": env.slug, "competitor_name": "memory-bot", "file": upload, "wipe_data": "true"},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert Revision.objects.get(pk=response.json()["id"]).wipe_data is True


# --- the API ---------------------------------------------------------------------------------------------


def test_the_owner_reads_the_summary_and_the_archive_with_a_token(comp, alice):
    api = _api(alice)
    response = api.get(f"/api/competitors/{comp.pk}/data/")
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["competitor"], data["files"], data["generation"], data["size_bytes"]) == (
        comp.pk,
        2,
        3,
        len(SECRET) + 2,
    )
    assert data["cap_bytes"] == 10 * 1024 * 1024
    assert data["updated_by_duel"] == comp.agent_data.updated_by_duel_id
    assert "not running" in data["last_problem"]
    assert data["archive_url"].endswith(f"/api/competitors/{comp.pk}/data/archive/")
    for accept in ("*/*", "application/x-tar"):
        archive = api.get(data["archive_url"], HTTP_ACCEPT=accept)
        assert archive.status_code == 200 and archive["Content-Type"] == "application/x-tar"
        assert files_of(archive.content)["notes/openings.txt"] == SECRET


def test_staff_read_but_cannot_reset_through_the_api(comp, staff):
    api = _api(staff)
    assert api.get(f"/api/competitors/{comp.pk}/data/").status_code == 200
    assert api.delete(f"/api/competitors/{comp.pk}/data/").status_code == 404
    assert StoredAgentData.objects.get(pk=comp.pk).generation == 3


@pytest.mark.parametrize("who", ["anonymous", "bob"])
def test_the_api_hides_the_folder_from_everyone_else(comp, bob, who):
    api = _api(bob if who == "bob" else None)
    assert api.get(f"/api/competitors/{comp.pk}/data/").status_code == 404
    archive = api.get(f"/api/competitors/{comp.pk}/data/archive/", HTTP_ACCEPT="application/x-tar")
    assert archive.status_code == 404 and archive["Content-Type"] == "application/json"
    assert SECRET not in archive.content
    assert api.delete(f"/api/competitors/{comp.pk}/data/").status_code in (401, 403, 404)
    assert StoredAgentData.objects.get(pk=comp.pk).generation == 3


def test_the_owner_resets_the_folder_with_delete(comp, alice):
    api = _api(alice)
    response = api.delete(f"/api/competitors/{comp.pk}/data/")
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["files"], data["size_bytes"], data["generation"], data["updated_by_duel"]) == (0, 0, 4, None)
    assert files_of(api.get(data["archive_url"]).content) == {}


def test_the_api_lists_the_data_endpoint_and_the_docs_describe_it(client, db):
    root = APIClient().get("/api/").json()
    assert root["competitor_data"].endswith("/api/competitors/{id}/data/")
    docs = client.get(reverse("web:api-docs")).content.decode()
    assert "/api/competitors/&lt;id&gt;/data/" in docs and "wipe_data" in docs
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/competitors/{id}/data/" in schema and "/api/competitors/{id}/data/archive/" in schema


# --- the guide -------------------------------------------------------------------------------------------


def test_the_guide_explains_the_data_folder(client, env, settings):
    html = client.get(reverse("web:guide")).content.decode()
    assert 'id="data-folder"' in html and "ARENA_DATA_DIR" in html and "10 MB" in html
    settings.AGENT_DATA_MB = 0
    assert 'id="data-folder"' not in client.get(reverse("web:guide")).content.decode()


# --- the admin -------------------------------------------------------------------------------------------


def test_the_admin_lists_folders_without_their_content_and_its_action_empties_them(comp, alice):
    from django.contrib.auth import get_user_model

    admin = get_user_model().objects.create_superuser("root@example.com", "a-Long-pass-phrase-42")
    client = _client(admin)
    listing = client.get(reverse("admin:core_storedagentdata_changelist"))
    assert listing.status_code == 200 and "memory-bot" in listing.content.decode()
    page = client.get(reverse("admin:core_storedagentdata_change", args=[comp.pk]))
    assert page.status_code == 200 and SECRET.decode() not in page.content.decode()
    done = client.post(
        reverse("admin:core_storedagentdata_changelist"),
        {"action": "reset", "_selected_action": [comp.pk]},
        follow=True,
    )
    assert "1 data folder(s) emptied" in done.content.decode()
    row = StoredAgentData.objects.get(competitor=comp)
    assert (bytes(row.archive), row.generation) == (b"", 4)
