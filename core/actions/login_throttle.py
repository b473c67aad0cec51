"""Login throttling that slows guessing without letting anyone lock a person out.

Every password login (the site's form, ``/admin/login/``, ``POST /api/auth/token/``) asks
:func:`check_login` before it checks the password, then reports :func:`login_failed` or
:func:`login_succeeded`. Three rules, counted in Django's cache (Redis in production, shared by every web
process):

1. **Per (account, address) backoff.** ``LOGIN_FREE_FAILURES`` wrong passwords for one account from one
   address are free; the next one makes that address wait 10 s before it may try that account again,
   and each further one doubles the wait (20 s, 40 s, ... up to ``LOGIN_BACKOFF_MAX_SECONDS``). A success
   clears it. Only the address that failed waits: failures from elsewhere never slow the account's owner.
2. **Per address.** One address may try at most ``RATE_LIMITS`` scope ``login`` attempts (any account,
   right or wrong) per window: a single machine cannot spray passwords over many accounts.
3. **An account under attack from many addresses.** Once an account collected ``login_account`` failures
   in a window, an address that has already failed for it waits for the window's end; an address with no
   failure for that account (the owner at home, at work, on a phone) is not affected.

There is no hard lock: every wait ends by itself, and none of them is shared with an address that did
not fail. The client's address comes from :func:`core.client_address.client_address`, which trusts
``X-Forwarded-For`` only from ``TRUSTED_PROXIES``: rotating that header does not give a new address.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

#: Defaults of the two windowed limits (``RATE_LIMITS=login=30/300,login_account=20/900`` overrides them).
DEFAULT_LIMITS: dict[str, tuple[int, int]] = {
    "login": (30, 300),  # attempts per address, any account
    "login_account": (20, 900),  # failures per account from all addresses before rule 3 applies
}
_PREFIX = "rl-arena:login"
#: The wait after the first failure past the free ones; each further failure doubles it.
FIRST_WAIT_SECONDS = 10


@dataclass(frozen=True)
class LoginVerdict:
    """Whether an attempt may go ahead; if not, how many seconds until it may, and why (for people)."""

    allowed: bool
    retry_after: int = 0
    reason: str = ""


def _limits(scope: str) -> tuple[int, int]:
    configured = getattr(settings, "RL_ARENA_RATE_LIMITS", {}) or {}
    hits, window = configured.get(scope, DEFAULT_LIMITS[scope])
    return int(hits), int(window)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _incr(key: str, timeout: int) -> int:
    cache.add(key, 0, timeout=timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=timeout)
        return 1


def _window(scope: str, *parts: str) -> tuple[str, int, int, int]:
    """(cache key of the current window, limit, window seconds, seconds left in it)."""
    hits, window = _limits(scope)
    now = time.time()
    bucket = int(now // window)
    left = max(1, int((bucket + 1) * window - now) + 1)
    return f"{_PREFIX}:{scope}:{_digest(*parts)}:{bucket}", hits, window, left


def _pair_keys(account: str, address: str) -> tuple[str, str]:
    pair = _digest(account.lower(), address)
    return f"{_PREFIX}:pair:{pair}:failures", f"{_PREFIX}:pair:{pair}:until"


def backoff_seconds(failures: int) -> int:
    """The wait after ``failures`` consecutive failures of one (account, address): none while they are
    free, then ``FIRST_WAIT_SECONDS``, doubling with each further failure, at most the setting's maximum."""
    free = settings.LOGIN_FREE_FAILURES
    if failures <= free:
        return 0
    wait = FIRST_WAIT_SECONDS * 2 ** min(failures - free - 1, 30)
    return int(min(settings.LOGIN_BACKOFF_MAX_SECONDS, wait))


def check_login(account: str, address: str) -> LoginVerdict:
    """May ``address`` try a password for ``account`` now? Counts the attempt against the address."""
    account = (account or "").strip().lower()
    key, hits, window, left = _window("login", address)
    if hits > 0 and _incr(key, window + 5) > hits:
        return LoginVerdict(False, left, "too many login attempts from your address")
    if not account:
        return LoginVerdict(True)
    failures_key, until_key = _pair_keys(account, address)
    until = cache.get(until_key)
    now = time.time()
    if until is not None and until > now:
        return LoginVerdict(False, int(until - now) + 1, "too many wrong passwords for this account")
    akey, ahits, _, aleft = _window("login_account", account)
    if ahits > 0 and (cache.get(akey) or 0) >= ahits and (cache.get(failures_key) or 0) > 0:
        return LoginVerdict(False, aleft, "this account is receiving many wrong passwords")
    return LoginVerdict(True)


def login_failed(account: str, address: str) -> None:
    """A wrong password (or an inactive account) for ``account`` from ``address``."""
    account = (account or "").strip().lower()
    if not account:
        return
    failures_key, until_key = _pair_keys(account, address)
    keep = int(settings.LOGIN_BACKOFF_MAX_SECONDS) * 4 + 3600
    failures = _incr(failures_key, keep)
    wait = backoff_seconds(failures)
    if wait:
        cache.set(until_key, time.time() + wait, timeout=wait + 5)
    akey, _, window, _ = _window("login_account", account)
    _incr(akey, window + 5)


def login_succeeded(account: str, address: str) -> None:
    """The right password: that address's failures for that account are forgotten."""
    cache.delete_many(list(_pair_keys((account or "").strip().lower(), address)))
