"""A small fixed-window rate limiter on Django's cache (shared by all workers when the cache is Redis)."""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest

#: Default limits; ``RATE_LIMITS=login=10/300,...`` overrides them per scope (``RL_ARENA_RATE_LIMITS``).
DEFAULT_LIMITS: dict[str, tuple[int, int]] = {
    "login": (10, 300),  # 10 attempts per 5 minutes per client address and per account
    "signup": (5, 3600),
    "password_reset": (5, 3600),
    "upload": (20, 3600),  # 20 uploads per hour per user
}


def client_ip(request: HttpRequest) -> str:
    """The client address; trusts ``X-Forwarded-For`` only when ``settings.RL_ARENA_TRUST_PROXY`` is set."""
    if getattr(settings, "RL_ARENA_TRUST_PROXY", False):
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            return forwarded.split(",")[0].strip()
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def limits(scope: str) -> tuple[int, int]:
    """(max hits, window seconds) for ``scope``."""
    configured = getattr(settings, "RL_ARENA_RATE_LIMITS", {}) or {}
    return tuple(configured.get(scope, DEFAULT_LIMITS[scope]))  # type: ignore[return-value]


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
