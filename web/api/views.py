"""API views: each parses input, calls at most one action, and serializes pre-joined querysets."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions, status
from rest_framework.exceptions import PermissionDenied, Throttled
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core import actions
from core.actions.api_tokens import create_api_token, rotate_api_token
from core.actions.login_throttle import check_login, login_failed, login_succeeded
from core.models import ApiToken, Competitor, Duel, Environment, Match, Revision
from web import queries, ratelimit
from web.api import serializers as s
from web.api.authentication import HashedTokenAuthentication
from web.api.renderers import RENDERERS
from web.error_privacy import duel_detail, duel_sentence
from web.logtext import scrub_paths
from web.progress import smoke_verdict
from web.signed_in import signed_in
from web.views.pages import match_queryset, replay_data


class ApiRoot(APIView):
    """The API's entry point: every endpoint with its URL, the upload limit and where the client is.

    Open any of these URLs in a browser to use the API interactively (Django REST framework's browsable
    API: forms for POST, your session for authentication); programs send ``Authorization: Token ...``.
    """

    renderer_classes = RENDERERS
    name = "RL Arena API"
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=s.ApiRootSerializer)
    def get(self, request: Request) -> Response:
        """The endpoints, as absolute URLs."""

        def url(name: str, *args: Any) -> str:
            return request.build_absolute_uri(reverse(f"web:api:{name}", args=args))

        def template(name: str, placeholder: str, example: Any) -> str:
            # The example argument becomes the placeholder in the path's own segment, before the host is
            # added: a host or port holding the same characters (127.0.0.1 and id 1) is left alone.
            path = reverse(f"web:api:{name}", args=[example])
            segment = f"/{example}/"
            assert path.count(segment) == 1, path
            absolute = request.build_absolute_uri(path)
            assert absolute.endswith(path), absolute
            return absolute[: -len(path)] + path.replace(segment, f"/{placeholder}/")

        return Response(
            {
                "docs": request.build_absolute_uri(reverse("web:api-docs")),
                "schema": url("schema"),
                "token": url("token"),
                "environments": url("environment-list"),
                "environment": template("environment-detail", "{slug}", "connect-four"),
                "leaderboard": template("leaderboard", "{slug}", "connect-four"),
                "records": template("records", "{slug}", "connect-four"),
                "competitors": url("competitor-list"),
                "competitor": template("competitor-detail", "{id}", 1),
                "competitor_data": template("competitor-data", "{id}", 1),
                "revisions": url("revision-list"),
                "revision": template("revision-detail", "{id}", 1),
                "revision_logs": template("revision-logs", "{id}", 1),
                "duels": url("duel-list"),
                "duel": template("duel-detail", "{id}", 1),
                "duel_replays": template("duel-replays", "{id}", 1),
                "match_replay": template("match-replay", "{id}", 1),
                "challenges": url("challenge-list"),
                "submission_max_bytes": settings.SUBMISSION_MAX_BYTES,
                "client": request.build_absolute_uri(reverse("web:client-download")),
            }
        )


class EnvironmentList(generics.ListAPIView):
    """The active games."""

    renderer_classes = RENDERERS
    name = "Games"
    serializer_class = s.EnvironmentSerializer
    pagination_class = None
    queryset = Environment.objects.filter(is_active=True).order_by("name")


class EnvironmentDetail(generics.RetrieveAPIView):
    """One game, with its Markdown rules."""

    renderer_classes = RENDERERS
    name = "Game"
    serializer_class = s.EnvironmentSerializer
    lookup_field = "slug"
    queryset = Environment.objects.filter(is_active=True)


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

    renderer_classes = RENDERERS
    name = "Competitors"
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

    renderer_classes = RENDERERS
    name = "Competitor"
    serializer_class = s.CompetitorSerializer
    queryset = _competitors()


def _revisions() -> QuerySet[Revision]:
    return Revision.objects.select_related("competitor__owner", "competitor__environment")


class RevisionListCreate(generics.ListAPIView):
    """The caller's revisions (GET), or upload a new one (POST, multipart)."""

    renderer_classes = RENDERERS
    name = "Your revisions (POST: upload one)"
    serializer_class = s.RevisionSerializer
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    @extend_schema(
        parameters=[OpenApiParameter("competitor", int, description="Only this competitor's revisions.")]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The caller's revisions, newest first."""
        return super().get(request, *args, **kwargs)

    def get_serializer_class(self) -> type:
        """The upload's fields for POST (and the browsable API's form), the revision's for GET."""
        return s.RevisionUploadSerializer if self.request.method == "POST" else s.RevisionSerializer

    def get_queryset(self) -> QuerySet[Revision]:
        """Only the caller's own revisions, newest first (optionally of one competitor)."""
        qs = _revisions().filter(competitor__owner=signed_in(self.request)).order_by("-created_at")
        comp = self.request.query_params.get("competitor", "")
        if comp.isdigit():
            qs = qs.filter(competitor_id=int(comp))
        return qs

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
                signed_in(request),
                data["environment"],
                data["competitor_name"],
                data["file"],
                is_public=data["is_public"],
                wipe_data=data["wipe_data"],
                agent_format=data["agent_format"],
                validated=form.validated_zip,
            )
        except actions.SubmissionError as exc:
            return Response({"file": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        except actions.StorageFull as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_507_INSUFFICIENT_STORAGE)
        revision = _revisions().get(pk=revision.pk)
        out = s.RevisionSerializer(revision, context={"request": request})
        return Response(out.data, status=status.HTTP_201_CREATED)


class RevisionDetail(generics.RetrieveAPIView):
    """A revision's state (poll it to follow the build and smoke test)."""

    renderer_classes = RENDERERS
    name = "Revision"
    serializer_class = s.RevisionSerializer
    queryset = _revisions()


class RevisionLogs(APIView):
    """Build and smoke-test logs of a revision: owner and staff only (others get 404)."""

    renderer_classes = RENDERERS
    name = "Revision logs"

    @extend_schema(responses=s.RevisionLogsSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """The latest build and smoke test."""
        rev = get_object_or_404(_revisions(), pk=pk)
        if not queries.can_see_private(request.user, rev.competitor.owner_id):
            raise Http404("No such revision.")
        build = rev.builds.order_by("-created_at").first()
        smoke = rev.smoke_tests.order_by("-created_at").defer("duel_json").first()
        verdict = smoke_verdict(smoke)
        data = {
            "revision": rev.pk,
            "state": rev.state,
            "build_state": build.state if build else None,
            "build_error": build.error if build else "",
            "build_log": scrub_paths(build.log) if build else "",
            "smoke_test_state": verdict.code if verdict else None,
            "smoke_test_job_state": smoke.state if smoke else None,
            "smoke_test_passed": smoke.passed if smoke else None,
            "smoke_test_reason": smoke.reason if smoke else "",
            "smoke_test_log": scrub_paths(smoke.log) if smoke else "",
        }
        return Response(s.RevisionLogsSerializer(data).data)


def _duels() -> QuerySet[Duel]:
    return queries.duels_with_players()


@extend_schema(
    parameters=[
        OpenApiParameter("environment", str, description="Only this game (slug)."),
        OpenApiParameter("competitor", int, description="Only duels of this competitor."),
        OpenApiParameter("opponent", int, description="With competitor: only duels against this competitor."),
        OpenApiParameter(
            "result", str, enum=list(queries.OUTCOMES), description="With competitor: its outcome."
        ),
        OpenApiParameter(
            "errors",
            str,
            enum=list(queries.ERROR_FILTERS),
            description="With competitor: duels where it erred (own), its opponent did, or either (any).",
        ),
    ]
)
class DuelList(generics.ListAPIView):
    """Duels, newest first; with ``competitor``, its history (filters as on its page)."""

    renderer_classes = RENDERERS
    name = "Duels"
    serializer_class = s.DuelSerializer

    def get_queryset(self) -> QuerySet[Duel]:
        """Filtered by ``environment``, ``competitor`` (and then ``opponent``, ``result``, ``errors``)."""
        params = self.request.query_params
        comp = params.get("competitor", "")
        if comp.isdigit():
            competitor = get_object_or_404(Competitor, pk=int(comp))
            revision_ids = list(competitor.revisions.values_list("pk", flat=True))
            opponent = params.get("opponent", "")
            qs = queries.duel_history(
                competitor,
                revision_ids,
                opponent_id=int(opponent) if opponent.isdigit() else None,
                outcome=params.get("result", "") if params.get("result") in queries.OUTCOMES else "",
                errors=params.get("errors", "") if params.get("errors") in queries.ERROR_FILTERS else "",
            )
        else:
            qs = queries.duels_with_players().order_by("-created_at")
        env = params.get("environment")
        if env:
            qs = qs.filter(environment__slug=env)
        return qs


class DuelDetail(generics.RetrieveAPIView):
    """A duel with its matches (without states: see the replay endpoint)."""

    renderer_classes = RENDERERS
    name = "Duel"
    serializer_class = s.DuelDetailSerializer

    def get_queryset(self) -> QuerySet[Duel]:
        """Matches pre-fetched without their states (the packed actions count the moves for an error's
        sentence)."""
        matches = Match.objects.order_by("index").defer("states")
        return _duels().prefetch_related(Prefetch("matches", queryset=matches))


class DuelReplays(APIView):
    """A duel with every match's replay (states, actions, moves, move times), in one request; each
    player's log (its stderr) for that player's owner and staff. What ``rl-arena download`` stores."""

    renderer_classes = RENDERERS
    name = "Duel with replays"

    @extend_schema(responses=s.DuelReplaysSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """Three queries whatever the number of matches."""
        duel = get_object_or_404(queries.duels_with_players(), pk=pk)
        data = dict(s.DuelSerializer(duel, context={"request": request}).data)
        matches = list(duel.matches.order_by("index"))
        for m in matches:
            m.duel = duel
        data["matches"] = [replay_data(m, request.user) for m in matches]
        owners = [duel.revision_1.competitor.owner_id, duel.revision_2.competitor.owner_id]
        allowed = [
            f"player_{i + 1}_log" for i in range(2) if queries.can_see_private(request.user, owners[i])
        ]
        extra = Duel.objects.filter(pk=duel.pk).values("result", "error_msg", *allowed).get()
        data["error_msg"] = duel_sentence(extra["result"], extra["error_msg"])
        data["error_detail"] = duel_detail(extra["error_msg"], request.user)
        for i in range(2):
            key = f"player_{i + 1}_log"
            data[key] = scrub_paths(extra[key]) if key in allowed else None
        return Response(data)


class MatchReplay(APIView):
    """A match's replay: the states after each step, the actions and the move times."""

    renderer_classes = RENDERERS
    name = "Match replay"

    @extend_schema(responses=s.ReplaySerializer)
    def get(self, request: Request, pk: int) -> Response:
        """One query."""
        match = get_object_or_404(match_queryset(), pk=pk)
        return Response(replay_data(match, request.user))


def _token_response(key: str, token: ApiToken, code: int = status.HTTP_200_OK) -> Response:
    body = {"token": key, "expires_at": token.expires_at, "prefix": token.prefix}
    return Response(s.TokenSerializer(body).data, status=code, headers={"Cache-Control": "no-store"})


class ObtainToken(APIView):
    """Exchange e-mail and password for a new API token (throttled like the login page). The key is shown
    in this answer only (the server keeps its hash); it expires after ``API_TOKEN_DAYS``."""

    renderer_classes = RENDERERS
    name = "API token"
    permission_classes = [permissions.AllowAny]
    authentication_classes: list = []

    @extend_schema(request=s.TokenRequestSerializer, responses=s.TokenSerializer)
    def post(self, request: Request) -> Response:
        """Check the credentials; answer a new token."""
        form = s.TokenRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        email = form.validated_data["email"].lower()
        address = ratelimit.client_ip(request)
        verdict = check_login(email, address)
        if not verdict.allowed:
            raise Throttled(wait=verdict.retry_after, detail=f"Too many attempts ({verdict.reason}).")
        user = authenticate(request, username=email, password=form.validated_data["password"])
        if user is None or not user.is_active:
            login_failed(email, address)
            return Response({"detail": "Wrong e-mail or password."}, status=status.HTTP_400_BAD_REQUEST)
        login_succeeded(email, address)
        key, token = create_api_token(user, label="API login")
        return _token_response(key, token)


class RotateToken(APIView):
    """Replace the token this request authenticates with by a new one (shown once); the old key stops
    working at once. Send ``Authorization: Token <key>``."""

    renderer_classes = RENDERERS
    name = "Rotate your API token"
    authentication_classes = [HashedTokenAuthentication]
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(request=None, responses=s.TokenSerializer)
    def post(self, request: Request) -> Response:
        """The new token."""
        current = request.auth if isinstance(request.auth, ApiToken) else None  # HashedTokenAuthentication's
        key, token = rotate_api_token(signed_in(request), current=current)
        return _token_response(key, token)
