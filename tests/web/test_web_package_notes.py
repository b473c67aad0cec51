"""What the builder said about a revision's packages (environment.yml pins relaxed, entries left out, the
shared stack used) is on its page and in the API; the image size its owner sees is what the agent adds."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from core.models import Revision
from tests.web import factories
from tests.web.factories import PASSWORD

pytestmark = pytest.mark.django_db

NOTES = [
    "environment.yml: numpy=1.16 (line 8) has no wheel for Python 3.11: installed numpy 1.23.5 instead "
    "(the nearest version on this server's package index)",
    "environment.yml: left out python=3.7 (line 6): the arena runs its own Python (3.11)",
    "torch 2.13.0+cpu from this server's shared stack (rl-arena-agent-base-torch:1)",
]


@pytest.fixture
def torch_agent(alice, env):
    comp = factories.competitor(owner=alice, env=env, name="torch-bot")
    rev = comp.current_revision
    Revision.objects.filter(pk=rev.pk).update(
        packages=[["numpy", "1.23.5"]],
        package_notes=NOTES,
        stack="torch 2.13.0+cpu",
        image_bytes=1100 * 1024 * 1024,
        added_bytes=37 * 1024 * 1024,
    )
    return comp, rev


def test_the_revision_page_says_what_was_installed_instead_left_out_and_the_stack(alice_client, torch_agent):
    comp, rev = torch_agent
    html = alice_client.get(reverse("web:revision", args=[rev.pk])).content.decode()
    assert 'data-testid="package-notes"' in html
    assert "installed numpy 1.23.5 instead" in html and "left out python=3.7 (line 6)" in html
    assert 'data-testid="agent-stack">torch 2.13.0+cpu<' in html
    # The owner sees what the agent adds (37 MB), the stack's shared layers aside.
    assert "image 37.0\xa0MB" in html and "image 1.1\xa0GB" not in html
    page = alice_client.get(reverse("web:competitor", args=[comp.pk])).content.decode()
    assert "image 37.0\xa0MB" in page


def test_the_api_lists_packages_notes_and_stack_and_the_added_size_for_the_owner_only(torch_agent, bob):
    _comp, rev = torch_agent
    api = APIClient()
    for email, size in (("bob@example.com", None), ("alice@example.com", 37 * 1024 * 1024)):
        token = api.post("/api/auth/token/", {"email": email, "password": PASSWORD}, format="json").json()
        api.credentials(HTTP_AUTHORIZATION="Token " + token["token"])
        body = api.get(f"/api/revisions/{rev.pk}/").json()
        assert body["packages"] == [["numpy", "1.23.5"]]
        assert body["package_notes"] == NOTES
        assert body["stack"] == "torch 2.13.0+cpu"
        assert body["added_bytes"] == size, email
