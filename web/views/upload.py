"""The upload page: a new competitor or a new revision of one of yours."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from agent_uploads.languages import describe
from core import actions
from core.models import Competitor, Environment
from web import ratelimit
from web.forms import UploadForm
from web.middleware import submission_limit_mb
from web.signed_in import signed_in
from web.worker_notice import no_worker_notice


@login_required
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    """Validate the form, then hand the zip to ``core.actions.submit_revision``."""
    initial: dict[str, Any] = {"environment": request.GET.get("environment", "")}
    comp_id = request.GET.get("competitor")
    if comp_id and comp_id.isdigit():
        comp = (
            Competitor.objects.filter(pk=comp_id, owner=signed_in(request))
            .select_related("environment")
            .first()
        )
        if comp:
            initial = {"environment": comp.environment.slug, "name": comp.name, "is_public": comp.is_public}
    form = UploadForm(request.POST or None, request.FILES or None, initial=initial)
    status = 200
    if request.method == "POST":
        if not ratelimit.allow("upload", f"user:{request.user.pk}"):
            form.add_error(None, "You have uploaded a lot recently. Please wait before uploading again.")
            status = 429
        elif form.is_valid():
            data = form.cleaned_data
            try:
                revision = actions.submit_revision(
                    signed_in(request),
                    data["environment"].slug,
                    data["name"],
                    data["file"],
                    is_public=data["is_public"],
                    wipe_data=data["wipe_data"],
                    agent_format=data["agent_format"] or "auto",
                    validated=form.validated,
                )
            except actions.SubmissionError as exc:
                form.add_error("file", _sentence(str(exc)))
            except actions.StorageFull as exc:
                form.add_error(None, _sentence(str(exc)))
                status = 507
            else:
                language = form.validated.language if form.validated else None
                detected = f" Detected: {describe(language)}." if language else ""
                messages.success(
                    request,
                    f"Uploaded {revision.competitor.name} v{revision.version}.{detected} Building it now.",
                )
                return redirect("web:revision", pk=revision.pk)
        if form.errors and status == 200:
            status = 400
    mine = list(
        Competitor.objects.filter(owner=signed_in(request))
        .select_related("environment")
        .order_by("environment__name", "name")
    )
    context = {
        "form": form,
        "my_competitors": mine,
        "limit_mb": submission_limit_mb(),
        "environments": Environment.objects.filter(is_active=True).order_by("name"),
        # the local sandbox runs Python agents without packages (agent_uploads.local_support): say so, never
        # promise a compile or an install it refuses
        "local_sandbox": settings.SANDBOX == "local",
        "no_worker": no_worker_notice(),
    }
    return render(request, "web/upload.html", context, status=status)


def _sentence(message: str) -> str:
    """An action's error message as a sentence next to a field: capitalized, unless it starts with a
    file's name, whose case matters ("player.py is missing" reads "The file player.py is missing", never
    "Player.py is missing": not the file the zip needs)."""
    message = message.strip()
    if not message:
        return "The upload was refused."
    first, _, rest = message.partition(" ")
    if "." in first.rstrip(".:,;") or "/" in first or "_" in first:
        return f"The file {message}" if rest.startswith("is ") else message
    return message[:1].upper() + message[1:]
