"""Doors: API tokens are stored as hashes, shown once, expire, can be rotated and revoked; the migration
hashes the clear-text tokens of before (Django REST framework's ``authtoken_token``)."""

from __future__ import annotations

import hashlib
import importlib
import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from core.models import ApiToken
from tests.web.factories import PASSWORD

pytestmark = pytest.mark.django_db

KEY = re.compile(r"rla_[A-Za-z0-9_-]{36}")


def _login(email: str = "alice@example.com") -> dict:
    response = APIClient().post("/api/auth/token/", {"email": email, "password": PASSWORD}, format="json")
    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    return response.json()


def _get(key: str, url: str = "/api/revisions/") -> int:
    return APIClient().get(url, HTTP_AUTHORIZATION=f"Token {key}").status_code


def _database_text() -> str:
    """Every API token column of every row, as text: where a leaked dump would look."""
    return repr(list(ApiToken.objects.values_list()))


def test_the_database_keeps_only_a_hash_and_the_key_is_shown_once(alice, alice_client):
    data = _login()
    key = data["token"]
    assert KEY.fullmatch(key) and data["expires_at"]
    assert _get(key) == 200
    assert key not in _database_text()
    assert ApiToken.objects.get(user=alice).digest == hashlib.sha256(key.encode()).hexdigest()
    page = alice_client.get(reverse("web:profile")).content.decode()
    assert key not in page and data["prefix"] in page  # listed by its first characters only


def test_the_profile_shows_a_new_token_once_and_replacing_it_ends_the_old_ones(alice_client, alice):
    from_cli = _login()["token"]
    response = alice_client.post(reverse("web:token-rotate"))
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    html = response.content.decode()
    new = KEY.search(html[html.index("api-token-value") :]).group(0)
    assert new not in alice_client.get(reverse("web:profile")).content.decode()
    assert (_get(from_cli), _get(new)) == (401, 200)
    assert new not in _database_text()


def test_an_expired_token_is_refused_with_a_reason(alice, settings):
    settings.API_TOKEN_DAYS = 30
    key = _login()["token"]
    token = ApiToken.objects.get(user=alice)
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = APIClient().get("/api/revisions/", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 401 and "expired" in response.json()["detail"]


def test_a_program_rotates_the_token_it_uses_and_keeps_its_others(alice):
    laptop, server = _login()["token"], _login()["token"]
    response = APIClient().post("/api/auth/token/rotate/", HTTP_AUTHORIZATION=f"Token {server}")
    assert response.status_code == 200
    rotated = response.json()["token"]
    assert (_get(server), _get(rotated), _get(laptop)) == (401, 200, 200)
    assert APIClient().post("/api/auth/token/rotate/").status_code == 401


def test_a_revoked_token_stops_working(alice, alice_client, bob):
    key = _login()["token"]
    token = ApiToken.objects.get(user=alice)
    bob_client = APIClient()
    bob_client.force_login(bob)
    bob_client.post(reverse("web:token-revoke", args=[token.pk]))  # not Bob's: nothing happens
    assert _get(key) == 200
    alice_client.post(reverse("web:token-revoke", args=[token.pk]))
    assert _get(key) == 401


def test_the_migration_hashes_the_clear_text_tokens_of_before(alice):
    """As on a database that ran the old code: ``authtoken_token`` holds a key people saved."""
    old_key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE IF NOT EXISTS authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamp with time zone NOT NULL, user_id bigint NOT NULL UNIQUE)"
        )
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, now(), %s)", [old_key, alice.pk])
    migration = importlib.import_module("core.migrations.0008_api_tokens")
    with connection.schema_editor() as editor:
        migration.hash_existing_tokens(apps, editor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0  # no clear-text key is left
    assert old_key not in _database_text()
    assert _get(old_key) == 200  # the saved key keeps working until it expires
    assert ApiToken.objects.get(user=alice).expires_at is not None
