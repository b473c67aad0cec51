"""Downloading a game's records (JSON Lines, one step per line) from the site."""

from __future__ import annotations

import tempfile

from django.http import FileResponse, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from core.models import Environment, User
from core.records import RecordFilter, iter_records
from web.records_params import RecordParamsError, parse_record_params

JSONL = "application/x-ndjson"


def viewer_of(request: HttpRequest) -> User | None:
    """The logged-in user, or ``None`` for anonymous visitors."""
    return request.user if request.user.is_authenticated else None


@require_GET
def records_download(request: HttpRequest, slug: str) -> HttpResponseBase:
    """Every visible match of the game as a streamed ``.jsonl`` attachment (filters from the query
    string; no page limit unless ``limit`` is given)."""
    env = get_object_or_404(Environment, slug=slug, is_active=True)
    try:
        flt = parse_record_params(request.GET, paged=False)
    except RecordParamsError as exc:
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain; charset=utf-8")
    if request.GET.get("format") == "parquet":
        return _parquet_download(env, viewer_of(request), flt)
    response = StreamingHttpResponse(iter_records(env, viewer_of(request), flt), content_type=JSONL)
    response["Content-Disposition"] = f'attachment; filename="{env.slug}-records.jsonl"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _parquet_download(env: Environment, viewer: User | None, flt: RecordFilter) -> HttpResponseBase:
    """The same records as a Parquet file (``core/records_parquet.py``), written to a temporary file that
    the response streams and the operating system reclaims once it is closed."""
    from core.records_parquet import ParquetUnavailable, write_parquet

    spool = tempfile.TemporaryFile(suffix=".parquet")  # noqa: SIM115 - closed by the response
    try:
        write_parquet(env, viewer, flt, spool)  # type: ignore[arg-type]
    except ParquetUnavailable as exc:
        spool.close()
        return HttpResponse(f"{exc}\n", status=501, content_type="text/plain; charset=utf-8")
    spool.seek(0)
    response = FileResponse(spool, as_attachment=True, filename=f"{env.slug}-records.parquet")
    response["Content-Type"] = "application/vnd.apache.parquet"
    return response
