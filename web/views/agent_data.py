"""A competitor's data folder (``$ARENA_DATA_DIR``, kept between its duels): download and reset.

Private: the download is for the competitor's owner and staff, the reset for its owner only; everyone
else gets a 404, as for private sources. The summary is shown on the competitor page
(``pages.competitor``, ``can_see_private`` only: never part of the cached anonymous page).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.views.decorators.http import require_GET, require_POST

from core.actions.agent_data import empty_archive, load_agent_data, reset_agent_data
from core.models import Competitor
from web import queries


def data_filename(comp: Competitor) -> str:
    """The download's file name: ``<competitor>-data.tar``."""
    return f"{comp.name}-data.tar"


def archive_response(comp: Competitor) -> HttpResponse:
    """The folder as a tar attachment (a valid empty tar when the folder is empty), never cached."""
    archive, _generation = load_agent_data(comp.pk)
    response = HttpResponse(archive or empty_archive(), content_type="application/x-tar")
    response["Content-Disposition"] = f'attachment; filename="{data_filename(comp)}"'
    patch_cache_control(response, private=True, no_store=True)
    return response


@require_GET
def download(request: HttpRequest, pk: int) -> HttpResponse:
    """``/competitors/<pk>/data.tar``: the owner's and staff's; a 404 for anyone else."""
    comp = get_object_or_404(Competitor, pk=pk)
    if not queries.can_see_private(request.user, comp.owner_id):
        raise Http404("No such data.")
    return archive_response(comp)


@login_required
@require_POST
def reset(request: HttpRequest, pk: int) -> HttpResponse:
    """Empty the folder (``core.actions.reset_agent_data``); the form's ``confirm`` box must be ticked."""
    comp = get_object_or_404(Competitor, pk=pk)
    if request.user.pk != comp.owner_id:
        raise Http404("No such data.")
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm: resetting deletes every file in the data folder.")
    else:
        reset_agent_data(comp.pk)
        messages.success(
            request,
            f"The data folder of {comp.name} is now empty; its next duel starts from scratch. A duel running "
            "now will not write its folder back.",
        )
    return redirect(reverse("web:competitor", args=[comp.pk]) + "#data")
