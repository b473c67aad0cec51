"""A competitor's data folder through the API: ``GET``/``DELETE /api/competitors/<id>/data/`` and
``GET /api/competitors/<id>/data/archive/``.

The summary and the archive are for the competitor's owner and staff, the reset (``DELETE``) for its
owner only; anyone else gets a 404, as for revision logs.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.actions.agent_data import reset_agent_data
from core.models import Competitor
from web import queries
from web.api.renderers import RENDERERS
from web.views.agent_data import archive_response


class StoredDataSerializer(serializers.Serializer):
    """A competitor's data folder: size, cap, files, last change and last problem."""

    competitor = serializers.IntegerField()
    size_bytes = serializers.IntegerField(help_text="Bytes of the files in the folder.")
    cap_bytes = serializers.IntegerField(
        help_text="The folder's cap for this game (0: data folders are off)."
    )
    files = serializers.IntegerField(help_text="Regular files in the folder.")
    generation = serializers.IntegerField(help_text="Bumped by every save and every reset.")
    updated_at = serializers.DateTimeField(allow_null=True, help_text="Last save or reset (null: never).")
    updated_by_duel = serializers.IntegerField(
        allow_null=True, help_text="The duel whose end saved the current content (null: reset or never)."
    )
    last_problem = serializers.CharField(
        allow_blank=True, help_text="Why the last duel that could not save its folder did not."
    )
    last_problem_at = serializers.DateTimeField(allow_null=True)
    archive_url = serializers.URLField(help_text="The folder as an uncompressed tar.")


class TarRenderer(BaseRenderer):
    """Lets a client ask for ``application/x-tar`` (the archive view answers the tar itself)."""

    media_type = "application/x-tar"
    format = "tar"
    charset = None
    render_style = "binary"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        """Only reached for errors, which :class:`StoredDataArchive` renders as JSON instead."""
        return JSONRenderer().render(data)


def _competitor(request: Request, pk: int, *, owner_only: bool = False) -> Competitor:
    comp = get_object_or_404(Competitor.objects.select_related("environment"), pk=pk)
    allowed = (
        request.user.is_authenticated and request.user.pk == comp.owner_id
        if owner_only
        else queries.can_see_private(request.user, comp.owner_id)
    )
    if not allowed:
        raise Http404("No such data.")
    return comp


def _summary(request: Request, comp: Competitor) -> dict[str, Any]:
    data = queries.stored_data(comp)
    return {
        "competitor": comp.pk,
        "size_bytes": data.size_bytes,
        "cap_bytes": data.cap_bytes,
        "files": data.files,
        "generation": data.generation,
        "updated_at": data.updated_at,
        "updated_by_duel": data.updated_by_duel_id,
        "last_problem": data.last_problem,
        "last_problem_at": data.last_problem_at,
        "archive_url": request.build_absolute_uri(reverse("web:api:competitor-data-archive", args=[comp.pk])),
    }


class StoredData(APIView):
    """A competitor's data folder (``$ARENA_DATA_DIR``, kept between its duels): GET its summary (owner
    and staff), DELETE to empty it (owner; a duel running now will not write its folder back)."""

    renderer_classes = RENDERERS
    name = "Competitor data folder"

    @extend_schema(responses=StoredDataSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """Size, cap, files, last change, last problem, and where the archive is."""
        comp = _competitor(request, pk)
        return Response(StoredDataSerializer(_summary(request, comp)).data)

    @extend_schema(request=None, responses=StoredDataSerializer)
    def delete(self, request: Request, pk: int) -> Response:
        """Empty the folder (``core.actions.reset_agent_data``); answers the new summary."""
        comp = _competitor(request, pk, owner_only=True)
        reset_agent_data(comp.pk)
        return Response(StoredDataSerializer(_summary(request, comp)).data)


class StoredDataArchive(APIView):
    """A competitor's data folder as an uncompressed tar (owner and staff)."""

    renderer_classes = [JSONRenderer, TarRenderer]
    name = "Competitor data archive"

    @extend_schema(
        responses={(200, "application/x-tar"): OpenApiResponse(OpenApiTypes.BINARY, description="The tar.")}
    )
    def get(self, request: Request, pk: int) -> HttpResponse:
        """The tar (a valid empty one when the folder is empty), as an attachment."""
        return archive_response(_competitor(request, pk))

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        """Errors are JSON, whatever ``Accept`` asked for."""
        if isinstance(response, Response):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)
