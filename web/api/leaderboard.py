"""``GET /api/environments/<slug>/leaderboard/``: the ranked rows one page at a time, with HTTP caching.

- Pages: ``?limit=`` (default ``DEFAULT_LIMIT``, at most ``MAX_LIMIT``) and ``?offset=``; the body is the
  API's usual page, ``{"count", "next", "previous", "results"}``, plus the ``version`` of the ratings it
  was built from (a client paging through sees whether the ranking changed between its requests).
- Caching: the version is one indexed query (the game's latest ``Rating.updated_at``, which every rating
  run and the tie fit raise; ``web.page_cache.game_version``). Each page's JSON bytes are cached per
  (version, page, host); every page of a version is sliced from the process's serialized ranking, which a
  rating change patches rather than rebuilds. Entries live ``WEB_PAGE_CACHE_SECONDS``. What changes
  without a rating (a name, an owner's name, a playing version, a pause) the ranking re-reads once a
  minute; the version then carries the minute it changed in (``details_version``), so pages, ``ETag``
  and the serialized rows follow within a minute (only the changed rows serialized again).
- Stampedes: in each process one request at a time reflects a new version (``serialized_rows``: only the
  rows the ranking's snapshot changed are serialized again); concurrent ones serve the previous version's
  rows (their own ``version`` and ``ETag``, ``max-age=1``, not cached as the new version's page) or, in a
  process that has none yet, wait for the fresh rows.
- HTTP: a strong ``ETag`` per (version, page); ``If-None-Match`` gets a 304 before any cache lookup;
  ``Cache-Control: public, max-age=WEB_PUBLIC_MAX_AGE`` (nginx's micro-cache keeps it that long).

A request costs 1 SQL query on a cache hit (the version; the ranking's 2 more when it is rebuilt, and in
the first request of each minute, which re-reads the details), whatever the number of competitors and
matches.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.utils.cache import get_conditional_response, patch_vary_headers
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.models import Environment
from tournament_manager.leaderboard import LeaderboardRow, details_version
from web import page_cache, queries
from web.api import serializers as s
from web.api.renderers import RENDERERS
from web.page_cache import (
    etag_for,
    game_version,
    is_anonymous,
    mark_public,
    mark_stale,
    page_cache_seconds,
)

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class BadParameter(ValueError):
    """A query parameter out of range: ``{name: [message]}`` in a 400 answer."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.detail = {name: [message]}


def _int_param(params: Any, name: str, default: int, minimum: int, maximum: int | None) -> int:
    raw = params.get(name, "")
    if raw == "":
        return default
    if not raw.isdigit() or int(raw) < minimum or (maximum is not None and int(raw) > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise BadParameter(name, f"must be an integer {bound}")
    return int(raw)


def _link(request: HttpRequest, limit: int, offset: int) -> str:
    params = {"limit": limit, "offset": offset} if offset else {"limit": limit}
    return request.build_absolute_uri(request.path) + "?" + urlencode(params)


def page_data(
    request: HttpRequest, environment_id: int, version: str, limit: int, offset: int, slug: str = ""
) -> dict:
    """One page of the ranking as a dict (``count``, ``version``, ``next``, ``previous``, ``results``).

    ``version`` is the one the rows were built from: the previous one while another request rebuilds.
    """
    version, rows = serialized_rows(environment_id, version)
    return {
        "count": len(rows),
        "version": version,
        "next": _link(request, limit, offset + limit) if offset + limit < len(rows) else None,
        "previous": _link(request, limit, max(0, offset - limit)) if offset > 0 else None,
        "results": rows[offset : offset + limit],
        "intransitivity": intransitivity_data(environment_id, slug),
    }


def intransitivity_data(environment_id: int, slug: str) -> dict:
    """What one number per agent hides, from the stored fit: significant head-to-head cycles (each edge's
    head-to-head score) and the population view (Nash mixture of the head-to-head game and each agent's
    margin against it; computed for every game, shown on the page for games whose strategies cycle)."""
    found = queries.intransitivity(Environment(pk=environment_id, slug=slug))  # no query unless cycles
    return {
        "cycles": [
            {"competitors": [a, b, c], "scores": [ab, bc, ca]} for a, b, c, ab, bc, ca in found.cycles
        ],
        "population": [
            {"competitor_id": r.competitor_id, "competitor": r.competitor, "mass": r.mass, "margin": r.payoff}
            for r in found.population
        ],
        "cyclic_game": found.cyclic_game,
    }


def json_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The JSON answer: 304 for a current ``If-None-Match``, else the page's cached bytes."""
    try:
        limit = _int_param(request.GET, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        offset = _int_param(request.GET, "offset", 0, 0, None)
    except BadParameter as exc:
        return JsonResponse(exc.detail, status=400)
    found = ratings_version(slug)
    if found is None:
        return JsonResponse({"detail": "No such game."}, status=404)
    environment_id, version = found
    etag = etag_for("leaderboard", version, limit, offset)
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return mark_public(not_modified, etag)
    key = f"web:leaderboard-page:{etag.strip(chr(34))}:{request.get_host()}:{request.scheme}"
    body = cache.get(key)
    if body is None:
        data = page_data(request, environment_id, version, limit, offset, slug)
        body = JSONRenderer().render(data)
        if data["version"] != version:  # the previous ranking, served while the new one is built
            stale_etag = etag_for("leaderboard", data["version"], limit, offset)
            response = mark_stale(HttpResponse(body, content_type="application/json"), stale_etag)
            patch_vary_headers(response, ("Accept",))
            return response
        cache.set(key, body, timeout=page_cache_seconds())
    response = mark_public(HttpResponse(body, content_type="application/json"), etag)
    patch_vary_headers(response, ("Accept",))
    return response


def _plain_json(request: HttpRequest) -> bool:
    """An anonymous request that wants JSON (not the browsable API, no credentials to check)."""
    return (
        is_anonymous(request)
        and request.GET.get("format", "json") == "json"
        and "text/html" not in request.headers.get("Accept", "")
    )


def ratings_version(slug: str) -> tuple[int, str] | None:
    """``(environment id, version string)`` of an active game, None if there is no such game: the ratings'
    version (one query), then the details the process's ranking shows (``details_version``: no query but
    once a minute, when it re-reads them)."""
    found = game_version(slug)
    if found is None:
        return None
    version = f"{found[0]}-{found[1] or 0}"
    details = details_version(found[0])
    return found[0], f"{version}-{details}" if details else version


@dataclass(frozen=True)
class _Reflected:
    """One process's serialized ranking of a game: the version, the rows, and each row's source."""

    version: str
    rows: list[dict]
    #: competitor id -> (the ranking row a dict was serialized from, that dict).
    by_competitor: dict[int, tuple[LeaderboardRow, dict]]


_reflected: dict[int, _Reflected] = {}
_reflect_lock = threading.Lock()


def _reflect(environment_id: int, version: str, previous: _Reflected | None) -> _Reflected:
    """Serialize the ranking of ``version``: the rows the snapshot did not change keep their dicts."""
    ranked = queries.leaderboard(Environment(pk=environment_id))
    before = previous.by_competitor if previous is not None else {}
    kept: dict[int, dict] = {}
    for row in ranked:
        known = before.get(row.competitor_id)
        if known is not None and known[0] is row:
            kept[row.competitor_id] = known[1]
    changed = [row for row in ranked if row.competitor_id not in kept]
    # One serializer for all the changed rows: DRF builds its fields once per instance, not per row.
    fresh = iter(s.LeaderboardEntrySerializer(changed, many=True).data)
    by_competitor: dict[int, tuple[LeaderboardRow, dict]] = {}
    rows = []
    for row in ranked:
        data = kept.get(row.competitor_id)
        if data is None:
            data = dict(next(fresh))
        by_competitor[row.competitor_id] = (row, data)
        rows.append(data)
    return _Reflected(version, rows, by_competitor)


def serialized_rows(environment_id: int, version: str) -> tuple[str, list[dict]]:
    """``(version, rows)``: every ranked row of the game as JSON-ready dicts, for ratings ``version``.

    Each process keeps the last ranking it serialized and reflects a new version by serializing only the
    rows the ranking's snapshot changed (``tournament_manager.leaderboard``). One thread at a time does
    it; the others serve the previous version meanwhile (or wait, when there is none).
    """
    current = _reflected.get(environment_id)
    if current is not None and current.version == version:
        return current.version, current.rows
    if not _reflect_lock.acquire(blocking=False):
        page_cache.count_wait("leaderboard-rows")
        if current is not None:
            return current.version, current.rows
        _reflect_lock.acquire()
    try:
        current = _reflected.get(environment_id)
        if current is None or current.version != version:
            page_cache.count_build("leaderboard-rows")
            current = _reflect(environment_id, version, current)
            _reflected[environment_id] = current
        return current.version, current.rows
    finally:
        _reflect_lock.release()


class Leaderboard(APIView):
    """A game's ranked competitors, best expected score against the whole field first (``field_score``;
    competitors not yet in the fit last, by mu - 3 sigma), one page at a time (``limit``, ``offset``).

    Equal ranks are statistical ties. Answers carry an ``ETag`` (send it back in ``If-None-Match`` to get
    a 304 while the ranking is unchanged) and may be cached for a few seconds.
    """

    renderer_classes = RENDERERS
    name = "Leaderboard"

    @extend_schema(
        parameters=[
            OpenApiParameter("limit", int, description=f"rows (1-{MAX_LIMIT}, default {DEFAULT_LIMIT})"),
            OpenApiParameter("offset", int, description="rows to skip (default 0)"),
        ],
        responses=inline_serializer(
            "LeaderboardPage",
            {
                "count": serializers.IntegerField(),
                "version": serializers.CharField(),
                "next": serializers.URLField(allow_null=True),
                "previous": serializers.URLField(allow_null=True),
                "results": s.LeaderboardEntrySerializer(many=True),
            },
        ),
    )
    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """Anonymous JSON requests skip the framework (content negotiation, authentication, throttling:
        about half of their CPU); browsers and authenticated clients get the full API view."""
        if _plain_json(request):
            return json_page(request, kwargs["slug"])
        return super().dispatch(request, *args, **kwargs)

    def get(self, request: Request, slug: str) -> HttpResponse:
        """One page of the ranking (the browsable API, or JSON for an authenticated client)."""
        if request.accepted_renderer.format == "json":
            return json_page(request._request, slug)
        try:
            limit = _int_param(request.query_params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
            offset = _int_param(request.query_params, "offset", 0, 0, None)
        except BadParameter as exc:
            raise ValidationError(exc.detail) from exc
        found = ratings_version(slug)
        if found is None:
            raise Http404("No such game.")
        return Response(page_data(request._request, *found, limit, offset, slug))
