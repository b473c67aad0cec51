"""Operators' endpoints: ``/metrics`` (Prometheus, behind a token) and ``/readyz`` (readiness).

``/metrics`` exists only when ``METRICS_TOKEN`` is set, and answers only a request that carries it as a
bearer token (404 otherwise, so a scanner learns nothing). ``/readyz`` is public for load balancers and
answers each check's name with ``ok`` or ``failed``; the reasons (hosts, worker names) are added only for
a request carrying the metrics token.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ops.metrics import registry
from ops.readiness import readiness


def _has_token(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not _has_token(request):
        raise Http404
    response = HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
    add_never_cache_headers(response)
    return response


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    answers = readiness()
    ready = all(problem is None for problem in answers.values())
    body: dict[str, object] = {
        "status": "ok" if ready else "error",
        "checks": {name: "ok" if problem is None else "failed" for name, problem in answers.items()},
    }
    if _has_token(request):
        body["problems"] = {name: problem for name, problem in answers.items() if problem is not None}
    response = JsonResponse(body, status=200 if ready else 503)
    add_never_cache_headers(response)
    return response
