"""``GET /api/environments/<slug>/leaderboard/``: the ranked rows one page at a time, with HTTP caching.

- Pages: ``?limit=`` (default ``DEFAULT_LIMIT``, at most ``MAX_LIMIT``) and ``?offset=``; the body is the
  API's usual page, ``{"count", "next", "previous", "results"}``, plus the ``version`` of the ratings it
  was built from (a client paging through sees whether the ranking changed between its requests).
- Caching: the version is one query (the game's ratings: count and latest ``updated_at``, which the tie
  fit also raises). Each page's JSON bytes are cached per (version, page, host); every page of a version is
  sliced from one cached, serialized ranking, so a rating change costs one ``leaderboard()`` build.
- HTTP: a strong ``ETag`` per (version, page); ``If-None-Match`` gets a 304 before any cache lookup;
  ``Cache-Control: public, max-age=WEB_PUBLIC_MAX_AGE`` (nginx's micro-cache keeps it that long).

A request costs 2 SQL queries (the game with its ratings version, then nothing on a cache hit) whatever the
number of competitors and matches.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.core.cache import cache
from django.db.models import Count, Max
from django.http import Http404, HttpResponse
from django.utils.cache import get_conditional_response
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.models import Environment
from web import queries
from web.api import serializers as s
from web.api.renderers import RENDERERS
from web.page_cache import etag_for, mark_public

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
#: How long a serialized ranking or page stays cached (a new version makes new keys anyway).
CACHE_SECONDS = 600


def _int_param(request: Request, name: str, default: int, minimum: int, maximum: int | None) -> int:
    raw = request.query_params.get(name, "")
    if raw == "":
        return default
    if not raw.isdigit() or int(raw) < minimum or (maximum is not None and int(raw) > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise ValidationError({name: f"must be an integer {bound}"})
    return int(raw)


def ratings_version(slug: str) -> tuple[int, str] | None:
    """``(environment id, version string)`` of an active game, in one query; None if there is no such game."""
    row = (
        Environment.objects.filter(slug=slug, is_active=True)
        .annotate(n=Count("ratings"), m=Max("ratings__updated_at"))
        .values_list("pk", "n", "m")
        .first()
    )
    if row is None:
        return None
    pk, n, latest = row
    return pk, f"{pk}-{n}-{latest.timestamp() if latest else 0}"


def serialized_rows(environment_id: int, version: str) -> list[dict]:
    """Every ranked row of the game as JSON-ready dicts, built once per ratings version."""
    key = f"web:leaderboard-rows:{version}"
    rows = cache.get(key)
    if rows is None:
        ranked = queries.leaderboard(Environment.objects.get(pk=environment_id))
        rows = [dict(r) for r in s.LeaderboardEntrySerializer(ranked, many=True).data]
        cache.set(key, rows, timeout=CACHE_SECONDS)
    return rows


class Leaderboard(APIView):
    """A game's ranked competitors, best mu - 3 sigma first, one page at a time (``limit``, ``offset``).

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
    def get(self, request: Request, slug: str) -> HttpResponse:
        """One page of the ranking."""
        limit = _int_param(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        offset = _int_param(request, "offset", 0, 0, None)
        found = ratings_version(slug)
        if found is None:
            raise Http404("No such game.")
        environment_id, version = found
        as_json = request.accepted_renderer.format == "json"
        etag = etag_for("leaderboard", version, limit, offset, as_json)
        if as_json:
            not_modified = get_conditional_response(request, etag=etag)
            if not_modified is not None:
                return mark_public(not_modified, etag)
        key = f"web:leaderboard-page:{etag.strip(chr(34))}:{request.get_host()}:{request.scheme}"
        body = cache.get(key) if as_json else None
        if body is None:
            rows = serialized_rows(environment_id, version)
            page = {
                "count": len(rows),
                "version": version,
                "next": self._link(request, limit, offset + limit) if offset + limit < len(rows) else None,
                "previous": self._link(request, limit, max(0, offset - limit)) if offset > 0 else None,
                "results": rows[offset : offset + limit],
            }
            if not as_json:  # the browsable API (HTML)
                return Response(page)
            body = JSONRenderer().render(page)
            cache.set(key, body, timeout=CACHE_SECONDS)
        return mark_public(HttpResponse(body, content_type="application/json"), etag)

    @staticmethod
    def _link(request: Request, limit: int, offset: int) -> str:
        params = {"limit": limit, "offset": offset} if offset else {"limit": limit}
        return request.build_absolute_uri(request.path) + "?" + urlencode(params)
