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


class UploadSizeLimitMiddleware:
    """Answer 413 from the ``Content-Length`` header alone when the body would exceed the cap.

    It sits before the CSRF middleware, which would otherwise parse (and spool to disk) the whole body.
    Bodies without a ``Content-Length`` are read by Django only up to the length it declares, i.e. not at
    all, so they cannot get around the check.
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
            limit_mb = settings.SUBMISSION_MAX_BYTES // (1024 * 1024)
            message = f"The upload is too large: the limit is {limit_mb} MB."
            if request.path.startswith("/api/"):
                response: HttpResponse = JsonResponse({"detail": message}, status=413)
            else:
                html = render_to_string("web/error.html", {"title": "Upload too large", "message": message})
                response = HttpResponse(html, status=413)
            response["Connection"] = "close"
            return response
        return self.get_response(request)
