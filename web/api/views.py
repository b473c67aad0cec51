"""API views: each parses input, calls at most one action, and serializes pre-joined querysets."""

from __future__ import annotations

from django.contrib.auth import authenticate
from django.core.cache import cache
from django.db.models import Prefetch, Q, QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions, status
from rest_framework.exceptions import PermissionDenied, Throttled
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import actions
from core.models import Competitor, Duel, Environment, Match, Revision
from web import account_actions, queries, ratelimit
from web.api import serializers as s
from web.views.pages import match_queryset, replay_data

LEADERBOARD_CACHE_SECONDS = 600


class EnvironmentList(generics.ListAPIView):
    """The active games."""

    serializer_class = s.EnvironmentSerializer
    pagination_class = None
    queryset = Environment.objects.filter(is_active=True).order_by("name")


class EnvironmentDetail(generics.RetrieveAPIView):
    """One game, with its Markdown rules."""

    serializer_class = s.EnvironmentSerializer
    lookup_field = "slug"
    queryset = Environment.objects.filter(is_active=True)


class Leaderboard(APIView):
    """A game's ranked competitors, best mu - 3 sigma first; cached per ratings version."""

    @extend_schema(responses=s.LeaderboardEntrySerializer(many=True))
    def get(self, request: Request, slug: str) -> HttpResponse:
        """All ranked rows, as JSON bytes cached per ratings version."""
        env = get_object_or_404(Environment, slug=slug, is_active=True)
        key = f"web:leaderboard-json:{queries.leaderboard_version(env)}"
        body = cache.get(key)
        if body is None:  # ratings changed since it was last serialized
            data = s.LeaderboardEntrySerializer(queries.leaderboard(env), many=True).data
            body = JSONRenderer().render(data)
            cache.set(key, body, timeout=LEADERBOARD_CACHE_SECONDS)
        return HttpResponse(body, content_type="application/json")


def _competitors() -> QuerySet[Competitor]:
    latest = Revision.objects.order_by("competitor_id", "-version").only(
        "id", "version", "state", "competitor_id"
    )
    return Competitor.objects.select_related("environment", "owner", "current_revision").prefetch_related(
        Prefetch("revisions", queryset=latest, to_attr="latest"), "ratings"
    )


@extend_schema(
    parameters=[
        OpenApiParameter("environment", str, description="Only this game (slug)."),
        OpenApiParameter("mine", bool, description="Only the caller's competitors."),
    ]
)
class CompetitorList(generics.ListAPIView):
    """Competitors, newest first."""

    serializer_class = s.CompetitorSerializer

    def get_queryset(self) -> QuerySet[Competitor]:
        """Filtered by ``environment`` and ``mine``."""
        qs = _competitors().order_by("-created_at")
        env = self.request.query_params.get("environment")
        if env:
            qs = qs.filter(environment__slug=env)
        if self.request.query_params.get("mine") in ("1", "true", "yes"):
            if not self.request.user.is_authenticated:
                raise PermissionDenied("Log in to list your competitors.")
            qs = qs.filter(owner=self.request.user)
        return qs


class CompetitorDetail(generics.RetrieveAPIView):
    """One competitor."""

    serializer_class = s.CompetitorSerializer
    queryset = _competitors()


def _revisions() -> QuerySet[Revision]:
    return Revision.objects.select_related("competitor__owner", "competitor__environment")


class RevisionListCreate(generics.ListAPIView):
    """The caller's revisions (GET), or upload a new one (POST, multipart)."""

    serializer_class = s.RevisionSerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    def get_queryset(self) -> QuerySet[Revision]:
        """Only the caller's own revisions, newest first."""
        return _revisions().filter(competitor__owner=self.request.user).order_by("-created_at")

    @extend_schema(request=s.RevisionUploadSerializer, responses={201: s.RevisionSerializer})
    def post(self, request: Request) -> Response:
        """Store the zip and queue its build (``core.actions.submit_revision``)."""
        if not ratelimit.allow("upload", f"user:{request.user.pk}"):
            raise Throttled(detail="Too many uploads recently; wait before uploading again.")
        form = s.RevisionUploadSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        data = form.validated_data
        try:
            revision = actions.submit_revision(
                request.user,
                data["environment"],
                data["competitor_name"],
                data["file"],
                is_public=data["is_public"],
            )
        except actions.SubmissionError as exc:
            return Response({"file": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        revision = _revisions().get(pk=revision.pk)
        out = s.RevisionSerializer(revision, context={"request": request})
        return Response(out.data, status=status.HTTP_201_CREATED)


class RevisionDetail(generics.RetrieveAPIView):
    """A revision's state (poll it to follow the build and smoke test)."""

    serializer_class = s.RevisionSerializer
    queryset = _revisions()


class RevisionLogs(APIView):
    """Build and smoke-test logs of a revision: owner and staff only (others get 404)."""

    @extend_schema(responses=s.RevisionLogsSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """The latest build and smoke test."""
        rev = get_object_or_404(_revisions(), pk=pk)
        if not queries.can_see_private(request.user, rev.competitor.owner_id):
            raise Http404("No such revision.")
        build = rev.builds.order_by("-created_at").first()
        smoke = rev.smoke_tests.order_by("-created_at").defer("duel_json").first()
        data = {
            "revision": rev.pk,
            "state": rev.state,
            "build_state": build.state if build else None,
            "build_error": build.error if build else "",
            "build_log": build.log if build else "",
            "smoke_test_state": smoke.state if smoke else None,
            "smoke_test_reason": smoke.reason if smoke else "",
            "smoke_test_log": smoke.log if smoke else "",
        }
        return Response(s.RevisionLogsSerializer(data).data)


def _duels() -> QuerySet[Duel]:
    return queries.duels_with_players()


@extend_schema(
    parameters=[
        OpenApiParameter("environment", str, description="Only this game (slug)."),
        OpenApiParameter("competitor", int, description="Only duels of this competitor."),
    ]
)
class DuelList(generics.ListAPIView):
    """Duels, newest first."""

    serializer_class = s.DuelSerializer

    def get_queryset(self) -> QuerySet[Duel]:
        """Filtered by ``environment`` and ``competitor``."""
        qs = queries.duels_with_players().order_by("-created_at")
        env = self.request.query_params.get("environment")
        if env:
            qs = qs.filter(environment__slug=env)
        comp = self.request.query_params.get("competitor")
        if comp and comp.isdigit():
            revisions = Revision.objects.filter(competitor_id=comp).values("pk")
            qs = qs.filter(Q(revision_1_id__in=revisions) | Q(revision_2_id__in=revisions))
        return qs


class DuelDetail(generics.RetrieveAPIView):
    """A duel with its matches (without states: see the replay endpoint)."""

    serializer_class = s.DuelDetailSerializer

    def get_queryset(self) -> QuerySet[Duel]:
        """Matches pre-fetched without their large JSON columns."""
        matches = Match.objects.order_by("index").defer("states", "actions", "move_times")
        return _duels().prefetch_related(Prefetch("matches", queryset=matches))


class MatchReplay(APIView):
    """A match's replay: the states after each step, the actions and the move times."""

    @extend_schema(responses=s.ReplaySerializer)
    def get(self, request: Request, pk: int) -> Response:
        """One query."""
        match = get_object_or_404(match_queryset(), pk=pk)
        return Response(replay_data(match))


class ObtainToken(APIView):
    """Exchange e-mail and password for an API token (rate-limited like the login page)."""

    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []

    @extend_schema(request=s.TokenRequestSerializer, responses=s.TokenSerializer)
    def post(self, request: Request) -> Response:
        """Check the credentials; answer the (existing or new) token."""
        form = s.TokenRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        email = form.validated_data["email"].lower()
        if not ratelimit.allow("login", ratelimit.client_ip(request), f"account:{email}"):
            raise Throttled(detail="Too many attempts; wait a few minutes.")
        user = authenticate(request, username=email, password=form.validated_data["password"])
        if user is None or not user.is_active:
            return Response({"detail": "Wrong e-mail or password."}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"token": account_actions.issue_api_token(user)})
