"""Downloading a game's records (JSON Lines, one step per line) from the site."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from core.models import Environment, User
from core.records import iter_records
from web.records_params import RecordParamsError, parse_record_params

JSONL = "application/x-ndjson"


def viewer_of(request: HttpRequest) -> User | None:
    """The logged-in user, or ``None`` for anonymous visitors."""
    return request.user if request.user.is_authenticated else None


@require_GET
def records_download(request: HttpRequest, slug: str) -> HttpResponse:
    """Every visible match of the game as a streamed ``.jsonl`` attachment (filters from the query
    string; no page limit unless ``limit`` is given)."""
    env = get_object_or_404(Environment, slug=slug, is_active=True)
    try:
        flt = parse_record_params(request.GET, paged=False)
    except RecordParamsError as exc:
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(iter_records(env, viewer_of(request), flt), content_type=JSONL)
    response["Content-Disposition"] = f'attachment; filename="{env.slug}-records.jsonl"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
