"""Accounts: sign-up, e-mail login (rate-limited), logout, profile, password change and reset."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from core.actions import login_throttle
from tests.web.factories import PASSWORD

pytestmark = pytest.mark.django_db
User = get_user_model()


def _signup(client, email="new@example.com", **extra):
    data = {
        "email": email,
        "display_name": "Newbie",
        "team": "Team N",
        "github": "newbie",
        "password1": PASSWORD,
        "password2": PASSWORD,
    }
    data.update(extra)
    return client.post(reverse("web:signup"), data)


def test_signup_creates_the_account_and_logs_in(client):
    response = _signup(client, email="New@Example.com")
    assert response.status_code == 302
    user = User.objects.get(email="new@example.com")
    assert (user.display_name, user.team, user.github) == ("Newbie", "Team N", "newbie")
    assert not user.is_staff
    assert client.get(reverse("web:profile")).status_code == 200


def test_signup_refuses_an_address_already_registered(client, alice):
    response = _signup(client, email="ALICE@example.com")
    assert response.status_code == 400
    assert "already exists" in response.content.decode()


def test_signup_refuses_mismatched_passwords(client):
    response = _signup(client, password2="something-else-entirely")
    assert response.status_code == 400
    assert "differ" in response.content.decode()
    assert not User.objects.filter(email="new@example.com").exists()


def test_signup_refuses_a_weak_password(client):
    response = _signup(client, password1="12345678", password2="12345678")
    assert response.status_code == 400
    assert not User.objects.exists()


def test_login_with_email_and_password(client, alice):
    response = client.post(reverse("web:login"), {"username": "alice@example.com", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("web:profile")).status_code == 200


def test_login_with_a_wrong_password_fails(client, alice):
    response = client.post(reverse("web:login"), {"username": "alice@example.com", "password": "nope"})
    assert response.status_code == 200
    assert client.get(reverse("web:profile")).status_code == 302  # still anonymous


def test_login_is_rate_limited_per_account(client, alice, settings, monkeypatch):
    # The guarantee is that the wait follows the failures, whatever the machine's speed: an hour's wait
    # (instead of 10 s doubling) cannot run out while ten slow password checks are made on a loaded machine.
    monkeypatch.setattr(login_throttle, "FIRST_WAIT_SECONDS", 3600)
    settings.LOGIN_BACKOFF_MAX_SECONDS = 7200
    for _ in range(10):
        client.post(reverse("web:login"), {"username": "alice@example.com", "password": "wrong"})
    response = client.post(reverse("web:login"), {"username": "alice@example.com", "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many attempts" in response.content.decode()
    assert client.get(reverse("web:profile")).status_code == 302


def test_logout_needs_a_post(alice_client):
    alice_client.post(reverse("web:logout"))
    assert alice_client.get(reverse("web:profile")).status_code == 302


def test_profile_update_changes_the_public_fields(alice_client, alice):
    response = alice_client.post(
        reverse("web:profile"), {"display_name": "Alice B.", "team": "Red", "github": "alice-b"}
    )
    assert response.status_code == 302
    alice.refresh_from_db()
    assert (alice.display_name, alice.team, alice.github) == ("Alice B.", "Red", "alice-b")


def test_profile_rejects_an_invalid_github_handle(alice_client):
    response = alice_client.post(reverse("web:profile"), {"display_name": "A", "team": "", "github": "-bad-"})
    assert response.status_code == 400
    assert "Not a valid GitHub user name" in response.content.decode()


def test_password_change(alice_client, alice):
    response = alice_client.post(
        reverse("web:password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "another-Long-phrase-7",
            "new_password2": "another-Long-phrase-7",
        },
    )
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("another-Long-phrase-7")


def test_password_reset_mails_a_link_that_sets_a_new_password(client, alice, mailoutbox):
    response = client.post(reverse("web:password_reset"), {"email": "alice@example.com"})
    assert response.status_code == 302
    assert len(mailoutbox) == 1
    link = re.search(r"http://testserver(/accounts/password/reset/\S+/)", mailoutbox[0].body).group(1)
    page = client.get(link, follow=True)
    assert page.context["validlink"]
    response = client.post(
        page.redirect_chain[-1][0],
        {"new_password1": "brand-New-phrase-99", "new_password2": "brand-New-phrase-99"},
    )
    assert response.status_code == 302
    alice.refresh_from_db()
    assert alice.check_password("brand-New-phrase-99")


def test_password_reset_for_an_unknown_address_sends_nothing_and_reveals_nothing(client, db, mailoutbox):
    response = client.post(reverse("web:password_reset"), {"email": "nobody@example.com"})
    assert response.status_code == 302
    assert mailoutbox == []
