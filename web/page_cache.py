"""Caching of public pages: whole pages for anonymous visitors, keyed by what they show, plus HTTP headers.

A page is cached under a *version*: one cheap query that changes whenever the ratings it shows change
(the game's ``Rating.updated_at``/count; a competitor's own rating, current revision and status). A rating
change therefore shows on the next request, whatever the cache holds. What changes without touching a
rating (a duel queued, a build finished) shows within ``WEB_PAGE_CACHE_SECONDS`` (the entry's lifetime).

Only anonymous requests use the cache (no session, messages or ``Authorization``): a signed-in page holds
the viewer's name, notifications and forms. Anonymous responses carry ``Cache-Control: public,
max-age=WEB_PUBLIC_MAX_AGE`` and a strong ``ETag`` (``If-None-Match`` gets a 304), so browsers and nginx's
micro-cache (``nginx/snippets/locations.conf``) may keep them a few seconds; others get ``private``.
A response that sets a cookie (CSRF, messages) is never cached.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers

#: Cookies that make a request personal: the session (signed in) and pending flash messages.
PERSONAL_COOKIES = ("sessionid", "messages")


def public_max_age() -> int:
    """Seconds browsers and proxies may reuse an anonymous public response (``WEB_PUBLIC_MAX_AGE``)."""
    return int(getattr(settings, "WEB_PUBLIC_MAX_AGE", 5))


def page_cache_seconds() -> int:
    """Lifetime of a cached page (``WEB_PAGE_CACHE_SECONDS``): how old non-rating content may get."""
    return int(getattr(settings, "WEB_PAGE_CACHE_SECONDS", 60))


def is_anonymous(request: HttpRequest) -> bool:
    """A GET/HEAD without a session, flash messages or credentials: its page is the same for everyone."""
    if request.method not in ("GET", "HEAD") or "HTTP_AUTHORIZATION" in request.META:
        return False
    names = {settings.SESSION_COOKIE_NAME, *PERSONAL_COOKIES}
    return not any(name in request.COOKIES for name in names)


def etag_for(*parts: Any) -> str:
    """A strong ETag (quoted) from ``parts``."""
    digest = hashlib.blake2b(repr(parts).encode(), digest_size=12).hexdigest()
    return f'"{digest}"'


def mark_public(response: HttpResponse, etag: str) -> HttpResponse:
    """Headers of a response every anonymous visitor may share."""
    response["ETag"] = etag
    patch_cache_control(response, public=True, max_age=public_max_age())
    patch_vary_headers(response, ("Cookie", "Authorization"))
    return response


def mark_private(response: HttpResponse) -> HttpResponse:
    """Headers of a response for one viewer only."""
    patch_cache_control(response, private=True, max_age=0)
    patch_vary_headers(response, ("Cookie",))
    return response


def _cacheable(request: HttpRequest, response: HttpResponse) -> bool:
    return (
        response.status_code == 200
        and not response.streaming
        and not response.cookies
        and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
        and not request.META.get("CSRF_COOKIE_USED")
    )


def cached_page(name: str, version: Callable[..., Any | None]) -> Callable:
    """Decorate a page view: anonymous requests are served from the cache under ``version(**kwargs)``.

    ``version`` takes the view's URL keyword arguments and returns something hashable that changes with
    what the page shows, or ``None`` when the object does not exist (the view then answers, e.g. 404).
    """

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            if not is_anonymous(request):
                return mark_private(view(request, **kwargs))
            current = version(**kwargs)
            if current is None:
                return view(request, **kwargs)
            path = request.get_full_path()
            etag = etag_for(name, current, path)
            not_modified = get_conditional_response(request, etag=etag)
            if not_modified is not None:
                return mark_public(not_modified, etag)
            key = f"web:page:{name}:{etag.strip(chr(34))}"
            entry = cache.get(key)
            if entry is None:
                response = view(request, **kwargs)
                if not _cacheable(request, response):
                    return mark_private(response)
                entry = (response.content, response["Content-Type"])
                cache.set(key, entry, timeout=page_cache_seconds())
            content, content_type = entry
            return mark_public(HttpResponse(content, content_type=content_type), etag)

        return wrapper

    return decorate


# --- versions: one indexed query each (plain SQL: building it with the ORM cost more CPU than running it) ---

_GAME_VERSION = """
SELECT e.id, (SELECT MAX(r.updated_at) FROM core_rating r WHERE r.environment_id = e.id)
FROM core_environment e WHERE e.slug = %s AND e.is_active
"""
_COMPETITOR_VERSION = """
SELECT c.current_revision_id, c.status,
       (SELECT MAX(r.updated_at) FROM core_rating r WHERE r.competitor_id = c.id)
FROM core_competitor c WHERE c.id = %s
"""


def _stamp(value: Any) -> str | None:
    return value.isoformat() if hasattr(value, "isoformat") else (str(value) if value is not None else None)


def game_version(slug: str) -> tuple | None:
    """``(environment id, latest Rating.updated_at)`` of an active game, or None for an unknown game.

    Every rating run and every stored tie fit raises ``updated_at`` (a new competitor's rating row is
    newer too), so the version changes whenever the ranking does. A deleted competitor does not change it:
    its row disappears from cached pages when their entries expire (``WEB_PAGE_CACHE_SECONDS``).
    """
    with connection.cursor() as cursor:
        cursor.execute(_GAME_VERSION, [slug])
        row = cursor.fetchone()
    return None if row is None else (row[0], _stamp(row[1]))


def competitor_version(pk: int) -> tuple | None:
    """A competitor's playing revision, status and rating stamp, or None if it does not exist."""
    with connection.cursor() as cursor:
        cursor.execute(_COMPETITOR_VERSION, [pk])
        row = cursor.fetchone()
    return None if row is None else (row[0], row[1], _stamp(row[2]))
