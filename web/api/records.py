"""``GET /api/environments/<slug>/records/``: a game's records as JSON Lines, one page of matches at a
time, with the next page's cursor in a ``Link: <...>; rel="next"`` header (and ``X-Next-After-Id``)."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from core.models import Environment
from core.records import iter_records, page_end
from web.records_params import DEFAULT_LIMIT, MAX_LIMIT, RecordParamsError, parse_record_params

JSONL = "application/x-ndjson"


class JSONLinesRenderer(BaseRenderer):
    """Lets clients ask for ``application/x-ndjson``; the view streams the body itself."""

    media_type = JSONL
    format = "jsonl"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        """Errors (the only rendered data) as one JSON line."""
        return JSONRenderer().render(data) + b"\n"


class Records(APIView):
    """One page of the game's records (matches in id order, ``limit`` a page)."""

    renderer_classes = [JSONLinesRenderer, JSONRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter("since", OpenApiTypes.STR, description="ISO date or date-time, inclusive"),
            OpenApiParameter("until", OpenApiTypes.STR, description="ISO date (whole day) or date-time"),
            OpenApiParameter(
                "min_rating",
                OpenApiTypes.FLOAT,
                description="both players' mu - 3 sigma right after the duel",
            ),
            OpenApiParameter("after_id", OpenApiTypes.INT, description="cursor: matches with a larger id"),
            OpenApiParameter(
                "limit",
                OpenApiTypes.INT,
                description=f"matches per page (default {DEFAULT_LIMIT}, max {MAX_LIMIT})",
            ),
        ],
        responses={
            (200, JSONL): OpenApiResponse(OpenApiTypes.STR, description="JSON Lines, one step a line")
        },
    )
    def get(self, request: Request, slug: str) -> HttpResponseBase:
        """Stream the page; ``Link`` names the next page when this one was full."""
        env = get_object_or_404(Environment, slug=slug, is_active=True)
        try:
            flt = parse_record_params(request.query_params, paged=True)
        except RecordParamsError as exc:
            body = json.dumps({"detail": str(exc)}) + "\n"
            return HttpResponse(body.encode(), status=400, content_type="application/json")
        viewer = request.user if request.user.is_authenticated else None
        last_id, more = page_end(env, viewer, flt)
        response = StreamingHttpResponse(
            iter_records(env, viewer, flt, last_id=last_id) if last_id is not None else iter(()),
            content_type=JSONL,
        )
        if more and last_id is not None:
            params = request.query_params.copy()
            params["after_id"] = str(last_id)
            params["limit"] = str(flt.limit)
            url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
            response["Link"] = f'<{url}>; rel="next"'
            response["X-Next-After-Id"] = str(last_id)
        return response
