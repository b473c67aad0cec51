"""A small fixed-window rate limiter on Django's cache (shared by all workers when the cache is Redis).

Logins are throttled by ``core.actions.login_throttle`` (backoff per account and address, never a lock);
this module limits sign-ups, password resets and uploads.
"""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

from core.client_address import client_address

#: Default limits; ``RATE_LIMITS=signup=5/3600,...`` overrides them per scope (``RL_ARENA_RATE_LIMITS``).
DEFAULT_LIMITS: dict[str, tuple[int, int]] = {
    "signup": (5, 3600),
    "password_reset": (5, 3600),
    "upload": (20, 3600),  # 20 uploads per hour per user
}


def client_ip(request: HttpRequest) -> str:
    """The client address: ``X-Forwarded-For`` counts only from ``TRUSTED_PROXIES`` (core.client_address)."""
    return client_address(request)


def limits(scope: str) -> tuple[int, int]:
    """(max hits, window seconds) for ``scope``."""
    configured = getattr(settings, "RL_ARENA_RATE_LIMITS", {}) or {}
    hits, seconds = configured.get(scope, DEFAULT_LIMITS[scope])
    return int(hits), int(seconds)


def hit(scope: str, key: str) -> bool:
    """Count one hit of ``key`` in ``scope``; ``True`` while within the limit, ``False`` once over it."""
    max_hits, window = limits(scope)
    if max_hits <= 0:
        return True
    bucket = int(time.time() // window)
    digest = hashlib.sha256(f"{scope}:{key}".encode()).hexdigest()[:32]
    cache_key = f"rl-arena:rl:{scope}:{digest}:{bucket}"
    cache.add(cache_key, 0, timeout=window + 5)
    try:
        count = cache.incr(cache_key)
    except ValueError:  # expired between add and incr
        cache.set(cache_key, 1, timeout=window + 5)
        count = 1
    return count <= max_hits


def allow(scope: str, *keys: str) -> bool:
    """Count a hit for every key (e.g. the address and the account); allowed only if all are within limits."""
    results = [hit(scope, key) for key in keys if key]
    return all(results)
