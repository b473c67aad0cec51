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

Rebuilds are single-flight (``single_flight``): after a rating change, one request per cache entry (the
game's ranking, one page) takes a short lock (``cache.add``) and rebuilds; concurrent ones get the previous
version's value marked stale (``Cache-Control: max-age=1``), or, when there is none, wait for the fresh one
(``REBUILD_WAIT_SECONDS`` at most, then build it themselves: never an error). ``builds`` counts rebuilds.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers

#: Seconds a rebuild lock lives (a rebuilder that died frees it then) and the longest a request waits for
#: someone else's rebuild when no previous value exists; then it builds the value itself.
REBUILD_LOCK_SECONDS = 10
REBUILD_WAIT_SECONDS = 10
#: Seconds between cache lookups while waiting, and the max-age of a stale (previous version's) answer.
REBUILD_POLL_SECONDS = 0.02
STALE_MAX_AGE = 1

#: Per process: rebuilds (``builds[name]``) and requests that found another one's rebuild running
#: (``waits[name]``). Read by tests and benchmarks.
builds: Counter[str] = Counter()
waits: Counter[str] = Counter()
_count_lock = threading.Lock()

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


def mark_stale(response: HttpResponse, etag: str) -> HttpResponse:
    """Headers of a previous version's response served while the current one is rebuilt."""
    mark_public(response, etag)
    patch_cache_control(response, max_age=STALE_MAX_AGE)
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


class Flight(NamedTuple):
    """A value from ``single_flight``: ``stale`` when it is the previous version's (a rebuild is running)."""

    value: Any
    stale: bool


def _count(counter: Counter[str], name: str) -> None:
    with _count_lock:
        counter[name] += 1


def count_build(name: str) -> None:
    """Count one build of ``name`` (what the stampede tests read)."""
    _count(builds, name)


def count_wait(name: str) -> None:
    """Count one request that found ``name`` being built and waited for it or served the previous one."""
    _count(waits, name)


def single_flight(name: str, key: str, build: Callable[[], Any], previous_key: str | None = None) -> Flight:
    """``cache[key]``, built by ``build()`` in one request at a time (``name`` labels the counters).

    The value is stored under ``key`` for ``WEB_PAGE_CACHE_SECONDS`` and under ``previous_key`` (the
    latest value of whatever version, kept ten times longer), which concurrent requests serve, stale,
    while a rebuild runs. Without a previous value they wait for the fresh one.
    """
    value = cache.get(key)
    if value is not None:
        return Flight(value, False)
    lock = f"{key}:rebuilding"
    deadline = time.monotonic() + REBUILD_WAIT_SECONDS
    counted = False
    while not cache.add(lock, 1, timeout=REBUILD_LOCK_SECONDS):
        if not counted:
            _count(waits, name)
            counted = True
            previous = cache.get(previous_key) if previous_key else None
            if previous is not None:
                return Flight(previous, True)
        if time.monotonic() > deadline:
            break  # the rebuilder is stuck or gone: build it here rather than fail
        time.sleep(REBUILD_POLL_SECONDS)
        value = cache.get(key)
        if value is not None:
            return Flight(value, False)
    try:
        value = cache.get(key)  # built while this request was taking the lock
        if value is None:
            _count(builds, name)
            value = build()
            cache.set(key, value, timeout=page_cache_seconds())
            if previous_key:
                cache.set(previous_key, value, timeout=10 * page_cache_seconds())
    finally:
        cache.delete(lock)
    return Flight(value, False)


class _Uncacheable(Exception):
    """A response that must not be shared (sets a cookie, not a 200): served as it is, stored nowhere."""

    def __init__(self, response: HttpResponse) -> None:
        super().__init__("uncacheable response")
        self.response = response


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

            def render() -> tuple[str, bytes, str]:
                response = view(request, **kwargs)
                if not _cacheable(request, response):
                    raise _Uncacheable(response)
                return (etag, response.content, response["Content-Type"])

            path_key = hashlib.blake2b(path.encode(), digest_size=12).hexdigest()
            try:
                flight = single_flight(
                    f"page:{name}",
                    f"web:page:{name}:{etag.strip(chr(34))}",
                    render,
                    previous_key=f"web:page-latest:{name}:{path_key}",
                )
            except _Uncacheable as exc:
                return mark_private(exc.response)
            served_etag, content, content_type = flight.value
            response = HttpResponse(content, content_type=content_type)
            return mark_stale(response, served_etag) if flight.stale else mark_public(response, served_etag)

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
