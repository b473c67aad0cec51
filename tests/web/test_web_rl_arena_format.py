"""The agent format on the upload page, in the API and on the revision page (the original rl-arena's
format detected from environment.yml next to player.py, or chosen)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from core.actions.api_tokens import create_api_token
from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from core.models import Revision

pytestmark = pytest.mark.django_db

THEIR_MINIMAX = EXAMPLES_DIR / "rl_arena" / "minimax"


def _zip(folder) -> SimpleUploadedFile:
    return SimpleUploadedFile("bot.zip", zip_folder(folder), "application/zip")


@pytest.mark.parametrize(
    ("folder", "choice", "shown"),
    [
        (
            THEIR_MINIMAX,
            "auto",
            "rl-arena (the original project&#x27;s Player)</strong>, detected from the upload",
        ),
        (
            EXAMPLES_DIR / "random",
            "auto",
            "native (this arena&#x27;s Player)</strong>, detected from the upload",
        ),
        (THEIR_MINIMAX, "native", "native (this arena&#x27;s Player)</strong>, chosen at upload"),
        (
            EXAMPLES_DIR / "random",
            "rl-arena",
            "rl-arena (the original project&#x27;s Player)</strong>, chosen",
        ),
    ],
)
def test_the_upload_form_takes_the_format_and_the_revision_page_shows_it(alice, env, folder, choice, shown):
    client = Client()
    client.force_login(alice)
    assert "Agent format" in client.get(reverse("web:upload")).content.decode()
    payload = {"environment": env.slug, "name": "fmt-bot", "file": _zip(folder), "agent_format": choice}
    response = client.post(reverse("web:upload"), payload)
    assert response.status_code == 302, response.content.decode()[:2000]
    revision = Revision.objects.get(competitor__name="fmt-bot")
    page = client.get(reverse("web:revision", args=[revision.pk])).content.decode()
    assert shown in page


def test_the_api_takes_the_format_and_refuses_it_where_rl_arena_had_no_such_game(alice, env):
    from tests.web import factories

    api = APIClient()
    key, _token = create_api_token(alice, label="test")
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = api.post(
        "/api/revisions/",
        {"environment": env.slug, "competitor_name": "api-fmt", "file": _zip(THEIR_MINIMAX)},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["agent_format"], body["agent_format_detected"]) == ("rl-arena", True)
    leduc = factories.environment("leduc-holdem")
    response = api.post(
        "/api/revisions/",
        {
            "environment": leduc.slug,
            "competitor_name": "api-fmt",
            "file": _zip(THEIR_MINIMAX),
            "agent_format": "rl-arena",
        },
        format="multipart",
    )
    assert response.status_code == 400
    assert "rl-arena format exists for tic-tac-toe, connect-four, quarto" in str(response.json())
