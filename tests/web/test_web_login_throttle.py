"""Doors: logins back off per (account, address) and per address, on the site, ``/admin/login/`` and the API;
wrong passwords from other addresses never keep the account's owner out; ``X-Forwarded-For`` counts only
when it comes from a configured proxy. Counts live in the cache (Redis in production)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.web.factories import PASSWORD
from web import ratelimit

pytestmark = pytest.mark.django_db

ATTACKER = "203.0.113.66"
OWNER_ADDRESS = "198.51.100.7"
#: A window long enough that no test straddles two of its fixed buckets.
LONG = 10**6


@pytest.fixture(autouse=True)
def _fast_passwords(settings, alice, staff) -> None:
    """A cheap hasher: these tests check passwords dozens of times."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    for user in (alice, staff):
        user.set_password(PASSWORD)
        user.save(update_fields=["password"])


def _site_login(client: Client, email: str, password: str, address: str) -> int:
    data = {"username": email, "password": password}
    return client.post("/accounts/login/", data, REMOTE_ADDR=address).status_code


def _admin_login(client: Client, email: str, password: str, address: str) -> int:
    data = {"username": email, "password": password, "next": "/admin/"}
    return client.post("/admin/login/", data, REMOTE_ADDR=address).status_code


def _api_login(email: str, password: str, address: str) -> int:
    body = {"email": email, "password": password}
    return APIClient().post("/api/auth/token/", body, format="json", REMOTE_ADDR=address).status_code


def test_wrong_passwords_from_elsewhere_never_lock_the_owner_out(staff):
    email = staff.email
    attacker = Client()
    for _ in range(8):
        _site_login(attacker, email, "guess", ATTACKER)
        _admin_login(attacker, email, "guess", ATTACKER)
        _api_login(email, "guess", ATTACKER)
    assert _site_login(attacker, email, PASSWORD, ATTACKER) == 429  # the guesser waits...
    # ...the owner, from their own address, gets in through every door.
    assert _site_login(Client(), email, PASSWORD, OWNER_ADDRESS) == 302
    assert _admin_login(Client(), email, PASSWORD, OWNER_ADDRESS) == 302
    assert Client().get("/admin/login/").status_code == 200  # the throttled route still shows the form
    assert _api_login(email, PASSWORD, OWNER_ADDRESS) == 200


@pytest.mark.parametrize("door", [_site_login, _admin_login])
def test_an_address_that_keeps_failing_waits_even_with_the_right_password(door, staff, settings):
    client = Client()
    for _ in range(settings.LOGIN_FREE_FAILURES):  # free failures: no wait yet
        assert door(client, staff.email, "guess", ATTACKER) == 200
    assert door(client, staff.email, "guess", ATTACKER) == 200  # one more: a wait starts
    response = client.post(
        "/accounts/login/" if door is _site_login else "/admin/login/",
        {"username": staff.email, "password": PASSWORD},
        REMOTE_ADDR=ATTACKER,
    )
    assert response.status_code == 429 and int(response["Retry-After"]) >= 1


def test_a_success_forgets_the_failures_of_that_address(alice, settings):
    client = Client()
    for _ in range(settings.LOGIN_FREE_FAILURES):
        _site_login(client, alice.email, "typo", OWNER_ADDRESS)
    assert _site_login(client, alice.email, PASSWORD, OWNER_ADDRESS) == 302
    client.post("/accounts/logout/")
    for _ in range(settings.LOGIN_FREE_FAILURES):  # the count started again
        assert _site_login(client, alice.email, "typo", OWNER_ADDRESS) == 200


def test_an_account_attacked_from_many_addresses_slows_those_addresses_only(alice, settings):
    settings.RL_ARENA_RATE_LIMITS = {"login_account": (10, LONG)}
    bots = [f"192.0.2.{i}" for i in range(1, 11)]
    for address in bots:  # one guess each: no address is over its own limit
        assert _site_login(Client(), alice.email, "guess", address) == 200
    assert _site_login(Client(), alice.email, "guess", bots[0]) == 429  # under attack: a bot waits
    assert _site_login(Client(), alice.email, PASSWORD, OWNER_ADDRESS) == 302  # the owner does not


def test_one_address_has_a_budget_of_attempts_over_all_accounts(settings):
    settings.RL_ARENA_RATE_LIMITS = {"login": (5, LONG)}
    codes = [_site_login(Client(), f"user{i}@example.com", "guess", ATTACKER) for i in range(6)]
    assert codes == [200] * 5 + [429]
    assert _site_login(Client(), "user0@example.com", "guess", OWNER_ADDRESS) == 200


def _request(remote: str, forwarded: str | None = None) -> SimpleNamespace:
    meta = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return SimpleNamespace(META=meta)


def test_forwarded_for_counts_only_from_trusted_proxies(settings):
    settings.RL_ARENA_TRUST_PROXY = True  # the old BEHIND_TLS_PROXY switch no longer trusts anyone
    settings.RL_ARENA_TRUSTED_PROXIES = ("10.0.0.2", "172.16.0.0/12")
    # Not through a proxy: the header is whatever the client wrote.
    assert ratelimit.client_ip(_request("203.0.113.5", "1.2.3.4")) == "203.0.113.5"
    # Through nginx ($proxy_add_x_forwarded_for): the client's own entries come first and are ignored.
    assert ratelimit.client_ip(_request("10.0.0.2", "1.2.3.4, 198.51.100.7")) == "198.51.100.7"
    # Two trusted hops (a load balancer in front of nginx).
    assert ratelimit.client_ip(_request("10.0.0.2", "1.2.3.4, 198.51.100.7, 172.18.0.3")) == "198.51.100.7"
    # Garbage stops at the last trusted hop; IPv6 and ports are understood.
    assert ratelimit.client_ip(_request("10.0.0.2", "not-an-address")) == "10.0.0.2"
    assert ratelimit.client_ip(_request("10.0.0.2", "[2001:db8::1]:4711")) == "2001:db8::1"
    settings.RL_ARENA_TRUSTED_PROXIES = ()
    assert ratelimit.client_ip(_request("10.0.0.2", "198.51.100.7")) == "10.0.0.2"


def test_rotating_forwarded_for_does_not_buy_more_attempts(alice, settings):
    settings.RL_ARENA_TRUST_PROXY = True
    settings.RL_ARENA_TRUSTED_PROXIES = ("10.0.0.2",)
    client = Client()
    for i in range(settings.LOGIN_FREE_FAILURES + 1):
        client.post(
            "/accounts/login/",
            {"username": alice.email, "password": "guess"},
            REMOTE_ADDR=ATTACKER,
            HTTP_X_FORWARDED_FOR=f"192.0.2.{i}",
        )
    response = client.post(
        "/accounts/login/",
        {"username": alice.email, "password": PASSWORD},
        REMOTE_ADDR=ATTACKER,
        HTTP_X_FORWARDED_FOR="192.0.2.200",
    )
    assert response.status_code == 429
