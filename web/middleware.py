"""Middleware that refuses oversized request bodies before anything reads them."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

#: Room for multipart boundaries and the other form fields around the zip.
MULTIPART_SLACK = 256 * 1024


def max_body_bytes() -> int:
    """The largest request body accepted: the submission cap plus multipart overhead."""
    return settings.SUBMISSION_MAX_BYTES + MULTIPART_SLACK


def submission_limit_mb() -> int:
    """The zip size limit in whole megabytes (MiB), as the upload form and the guide state it."""
    return settings.SUBMISSION_MAX_BYTES // (1024 * 1024)


def too_large_message(length: int) -> str:
    """What an oversized upload is told: its size and the limit."""
    return (
        f"The upload is too large ({length / (1024 * 1024):.0f} MB): the limit is "
        f"{submission_limit_mb()} MB for the zip. Leave out training data and caches, or shrink the model."
    )


class UploadSizeLimitMiddleware:
    """Answer 413 from the ``Content-Length`` header alone when the body would exceed the cap.

    It sits before the CSRF middleware, which would otherwise parse (and spool to disk) the whole body.
    Bodies without a ``Content-Length`` are read by Django only up to the length it declares, i.e. not at
    all, so they cannot get around the check.

    The answer carries no ``Connection`` header: it is hop-by-hop, and WSGI servers must refuse it (the
    development server turned the 413 into a bare 500). Each server deals with the unread body itself:
    Django's development server and gunicorn drain it before the next request, nginx refuses such bodies
    before they reach us (``client_max_body_size``).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        cap = max_body_bytes()
        if length > cap:
            message = too_large_message(length)
            if request.path.startswith("/api/"):
                return JsonResponse(
                    {"detail": message, "limit_bytes": settings.SUBMISSION_MAX_BYTES}, status=413
                )
            html = render_to_string(
                "web/error.html",
                {"title": "Upload too large", "message": message, "back": request.path},
                request=request,
            )
            return HttpResponse(html, status=413)
        return self.get_response(request)
