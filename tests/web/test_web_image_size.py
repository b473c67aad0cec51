"""Each revision's image size is shown to its owner (agent and revision pages), never to others."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Revision
from tests.web import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def sized(alice, env):
    comp = factories.competitor(owner=alice, env=env, name="big-bot")
    rev = comp.current_revision
    Revision.objects.filter(pk=rev.pk).update(image_bytes=537 * 1024 * 1024)
    return comp, rev


def test_the_owner_sees_the_image_size_of_each_revision(alice_client, sized):
    comp, rev = sized
    for url in (reverse("web:competitor", args=[comp.pk]), reverse("web:revision", args=[rev.pk])):
        html = alice_client.get(url).content.decode()
        assert 'data-testid="image-size"' in html and "image 537.0\xa0MB" in html, url


def test_other_people_do_not_see_it(client, bob, sized):
    comp, rev = sized
    for who in (None, bob):
        if who is not None:
            client.force_login(who)
        for url in (reverse("web:competitor", args=[comp.pk]), reverse("web:revision", args=[rev.pk])):
            assert "537.0" not in client.get(url).content.decode(), (who, url)
