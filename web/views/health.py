"""``/healthz``: the load balancer's probe. It checks that the database answers.

``HealthzMiddleware`` (first in ``MIDDLEWARE``) answers it before every other middleware: a probe needs no
session, CSRF, authentication, messages or host check (a balancer may probe by IP address), and each of
them costs CPU on every probe. Django's request signals still run around it, so the persistent database
connection is health-checked and recycled exactly as for any request. The URL route stays for ``reverse``.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET

PATH = "/healthz"


def health_response() -> JsonResponse:
    """200 ``{"status": "ok"}`` when ``SELECT 1`` works, else 503 with the reason; never cached."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        response = JsonResponse({"status": "error", "database": str(exc)[:200]}, status=503)
    else:
        response = JsonResponse({"status": "ok", "database": "ok"})
    add_never_cache_headers(response)
    return response


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """The probe through the URL router (reached only if the middleware is not installed)."""
    return health_response()


class HealthzMiddleware:
    """Answers ``GET``/``HEAD /healthz`` at once; everything else goes down the middleware chain."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path_info == PATH and request.method in ("GET", "HEAD"):
            return health_response()
        return self.get_response(request)
