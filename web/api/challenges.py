"""``POST /api/challenges/``: challenge a competitor with one of your own (an unrated duel)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.actions import ActionError
from core.actions.challenge import ChallengeLimitError, issue_challenge
from core.models import Duel
from web.api.renderers import RENDERERS
from web.api.serializers import DuelSerializer


class ChallengeRequestSerializer(serializers.Serializer):
    """Your competitor (``challenger``, player 1) and the one you challenge (``opponent``)."""

    challenger = serializers.IntegerField(min_value=1)
    opponent = serializers.IntegerField(min_value=1)


class Challenges(APIView):
    """Queue a challenge: 201 with the duel; 400 with ``detail`` when refused; 429 past the daily limit."""

    renderer_classes = RENDERERS
    name = "Challenges"
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=ChallengeRequestSerializer, responses={201: DuelSerializer})
    def post(self, request: Request) -> Response:
        """Validate the two ids and call ``core.actions.challenge.issue_challenge``."""
        body = ChallengeRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            duel = issue_challenge(
                request.user, body.validated_data["challenger"], body.validated_data["opponent"]
            )
        except ChallengeLimitError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_429_TOO_MANY_REQUESTS)
        except ActionError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        duel = Duel.objects.select_related(
            "environment", "revision_1__competitor__owner", "revision_2__competitor__owner"
        ).get(pk=duel.pk)
        return Response(
            DuelSerializer(duel, context={"request": request}).data, status=status.HTTP_201_CREATED
        )
