"""JSON shapes of the API. Read serializers expect their querysets to have the joins already made."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agent_uploads.zip_validation import ValidatedZip
from core.models import Competitor, Duel, Environment, Match, Revision
from tournament_manager.leaderboard import LeaderboardRow
from web.error_privacy import duel_detail, duel_sentence, match_detail, match_sentence
from web.forms import check_upload
from web.progress import FAILED_STATES, revision_progress
from web.queries import can_see_private


def _absolute(context: dict, url: str) -> str:
    request = context.get("request")
    return request.build_absolute_uri(url) if request is not None else url


class EnvironmentSerializer(serializers.ModelSerializer):
    """A game and its limits."""

    url = serializers.SerializerMethodField()

    class Meta:
        model = Environment
        fields = [
            "slug",
            "name",
            "description",
            "matches_per_duel",
            "smoke_test_matches",
            "move_time_limit",
            "init_time_limit",
            "memory_limit_mb",
            "cpu_limit",
            "url",
        ]

    def get_url(self, obj: Environment) -> str:
        """The game's page."""
        return _absolute(self.context, reverse("web:game", args=[obj.slug]))


class LeaderboardEntrySerializer(serializers.Serializer):
    """One ranked competitor. The rank estimates the expected score against the whole field (``field_score``,
    a Bradley-Terry fit of every rated result, each pair weighted the same); equal ranks are statistical
    ties (order unknown). Conservative skill = TrueSkill's mu - 3 sigma, which picks the opponents."""

    rank = serializers.IntegerField()
    competitor_id = serializers.IntegerField()
    competitor = serializers.CharField()
    owner = serializers.CharField()
    version = serializers.IntegerField(allow_null=True)
    is_paused = serializers.BooleanField()
    conservative_skill = serializers.FloatField(source="skill")
    mu = serializers.FloatField()
    sigma = serializers.FloatField()
    matches = serializers.IntegerField()
    wins = serializers.IntegerField()
    draws = serializers.IntegerField()
    losses = serializers.IntegerField()
    # The JSON field "errors" shadows Serializer.errors, which this output-only serializer never uses.
    errors = serializers.IntegerField()  # type: ignore[assignment]
    last_played_at = serializers.DateTimeField(allow_null=True)
    bradley_terry = serializers.SerializerMethodField()
    field_score = serializers.SerializerMethodField()

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_bradley_terry(self, row: LeaderboardRow) -> dict | None:
        """Strength and its 95 % bootstrap interval, when the competitor has rated matches."""
        if row.bt_strength is None:
            return None
        return {"strength": row.bt_strength, "lower": row.bt_lower, "upper": row.bt_upper}

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_field_score(self, row: LeaderboardRow) -> dict | None:
        """Expected score (win 1, draw 0.5) against an opponent drawn from the whole field, 95 % interval;
        null until the competitor is in the fit."""
        if row.field_score is None:
            return None
        return {"score": row.field_score, "lower": row.field_score_lower, "upper": row.field_score_upper}


class RevisionSerializer(serializers.ModelSerializer):
    """A revision's state; the failure reason only for its owner and staff."""

    competitor_id = serializers.IntegerField(read_only=True)
    competitor = serializers.CharField(source="competitor.name", read_only=True)
    environment = serializers.CharField(source="competitor.environment.slug", read_only=True)
    failure = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    source_url = serializers.SerializerMethodField()
    packages = serializers.JSONField(
        read_only=True, help_text="[name, version] of each package installed in its image (wheels)."
    )
    package_notes = serializers.JSONField(
        read_only=True,
        help_text="What the builder says about its packages: environment.yml pins relaxed to a version that "
        "has a wheel here, entries left out and why, the shared stack used.",
    )
    added_bytes = serializers.SerializerMethodField()

    class Meta:
        model = Revision
        fields = [
            "id",
            "competitor_id",
            "competitor",
            "environment",
            "version",
            "state",
            "is_public",
            "publish_state",
            "zip_size",
            "created_at",
            "built_at",
            "tested_at",
            "failure",
            "url",
            "source_url",
            "language",
            "agent_format",
            "agent_format_detected",
            "packages",
            "package_notes",
            "stack",
            "added_bytes",
        ]
        read_only_fields = [
            "language",
            "agent_format",
            "agent_format_detected",
            "packages",
            "package_notes",
            "stack",
        ]

    def _private(self, obj: Revision) -> bool:
        request = self.context.get("request")
        return can_see_private(getattr(request, "user", None), obj.competitor.owner_id)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_failure(self, obj: Revision) -> str | None:
        """Why it failed (owner and staff only), as the revision page says it: the revision's message,
        else its build's or smoke test's reason (one more query, only then), else a sentence; ``null``
        for a revision that did not fail and for everyone else."""
        if obj.state not in FAILED_STATES or not self._private(obj):
            return None
        if obj.error_message:
            return obj.error_message
        build = smoke = None
        if obj.state == Revision.State.BUILD_FAILED:
            build = obj.builds.order_by("-created_at").defer("log").first()
        elif obj.state == Revision.State.TEST_FAILED:
            smoke = obj.smoke_tests.order_by("-created_at").defer("log", "duel_json").first()
        return revision_progress(obj, build, smoke).failure_detail or None

    def get_url(self, obj: Revision) -> str:
        """The revision's page (live progress, logs)."""
        return _absolute(self.context, reverse("web:revision", args=[obj.pk]))

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_source_url(self, obj: Revision) -> str | None:
        """Download link of the zip, when the caller may download it."""
        if obj.is_public or self._private(obj):
            return _absolute(self.context, reverse("web:revision-download", args=[obj.pk]))
        return None

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_added_bytes(self, obj: Revision) -> int | None:
        """What its image adds to the shared base or stack image (owner and staff only)."""
        return obj.added_bytes if self._private(obj) else None


class RevisionUploadSerializer(serializers.Serializer):
    """Upload a zip holding ``player.py``; the competitor is created on its first upload."""

    environment = serializers.SlugField(help_text="Game slug, e.g. connect-four.")
    competitor_name = serializers.CharField(max_length=64)
    file = serializers.FileField(help_text="The agent zip.")
    is_public = serializers.BooleanField(default=False, help_text="Publish the source.")
    wipe_data = serializers.BooleanField(
        default=False,
        help_text="Start this revision with an empty data folder: the competitor's stored data is deleted "
        "when it starts playing.",
    )
    agent_format = serializers.ChoiceField(
        choices=["auto", "native", "kaggle", "rl-arena"],
        default="auto",
        help_text="auto (default): rl-arena when environment.yml sits next to player.py in tic-tac-toe, "
        "connect-four or quarto, else native. rl-arena: a Player written for the original rl-arena gets "
        "that project's states, actions and rewards. kaggle: always run as a Kaggle agent.",
    )

    #: The upload read and validated by ``validate_file`` (``None``: refused further on, by the action).
    validated_zip: ValidatedZip | None = None

    def validate_file(self, upload: Any) -> Any:
        """Size, zip signature and Python syntax, as on the upload page."""
        try:
            self.validated_zip = check_upload(upload)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return upload


class RevisionLogsSerializer(serializers.Serializer):
    """Build and smoke-test output of a revision (owner and staff only)."""

    revision = serializers.IntegerField()
    state = serializers.CharField()
    build_state = serializers.CharField(allow_null=True)
    build_error = serializers.CharField(allow_blank=True)
    build_log = serializers.CharField(allow_blank=True)
    smoke_test_state = serializers.CharField(
        allow_null=True,
        help_text="The smoke test's verdict: PASSED, FAILED (the agent broke a rule), ERROR (it could not "
        "run, on our side), QUEUED or RUNNING.",
    )
    smoke_test_job_state = serializers.CharField(
        allow_null=True, help_text="The job's own state (SUCCEEDED means it ran to the end, passed or not)."
    )
    smoke_test_passed = serializers.BooleanField(allow_null=True)
    smoke_test_reason = serializers.CharField(allow_blank=True)
    smoke_test_log = serializers.CharField(allow_blank=True)


class RevisionBriefSerializer(serializers.ModelSerializer):
    """Id, version and state."""

    class Meta:
        model = Revision
        fields = ["id", "version", "state"]


class CompetitorSerializer(serializers.ModelSerializer):
    """A competitor with its latest revision and rating."""

    environment = serializers.CharField(source="environment.slug")
    owner = serializers.CharField(source="owner.public_name")
    current_version = serializers.IntegerField(
        source="current_revision.version", allow_null=True, default=None
    )
    latest_revision = serializers.SerializerMethodField()
    rating = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    is_playing = serializers.SerializerMethodField()
    pause_reason = serializers.SerializerMethodField()

    class Meta:
        model = Competitor
        fields = [
            "id",
            "name",
            "environment",
            "owner",
            "is_public",
            "status",
            "is_playing",
            "pause_reason",
            "current_version",
            "latest_revision",
            "rating",
            "created_at",
            "url",
        ]

    def get_is_playing(self, obj: Competitor) -> bool:
        """Whether it plays duels now: ACTIVE (not paused) with an ELIGIBLE revision."""
        return obj.status == Competitor.Status.ACTIVE and obj.current_revision_id is not None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_pause_reason(self, obj: Competitor) -> str | None:
        """Why it is paused (owner and staff only; ``null`` when it is not paused)."""
        if obj.status == Competitor.Status.ACTIVE:
            return None
        request = self.context.get("request")
        if not can_see_private(getattr(request, "user", None), obj.owner_id):
            return None
        return obj.pause_reason or "Paused by an operator."

    @extend_schema_field(RevisionBriefSerializer(allow_null=True))
    def get_latest_revision(self, obj: Competitor) -> dict | None:
        """The newest upload (from the pre-fetched ``latest`` list)."""
        revisions = getattr(obj, "latest", None)
        return RevisionBriefSerializer(revisions[0]).data if revisions else None

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_rating(self, obj: Competitor) -> dict | None:
        """mu, sigma and conservative skill (from the pre-fetched ratings)."""
        ratings = list(obj.ratings.all())
        if not ratings:
            return None
        r = ratings[0]
        return {"mu": r.mu, "sigma": r.sigma, "conservative": r.skill, "matches": r.matches}

    def get_url(self, obj: Competitor) -> str:
        """The competitor's page."""
        return _absolute(self.context, reverse("web:competitor", args=[obj.pk]))


class DuelPlayerSerializer(serializers.ModelSerializer):
    """One side of a duel."""

    competitor_id = serializers.IntegerField()
    competitor = serializers.CharField(source="competitor.name")
    owner = serializers.CharField(source="competitor.owner.public_name")

    class Meta:
        model = Revision
        fields = ["id", "version", "competitor_id", "competitor", "owner"]


class MatchBriefSerializer(serializers.ModelSerializer):
    """A match without its states (see the replay endpoint). ``error_msg`` is the platform's sentence;
    ``error_detail`` the referee's text, for the owner of the agent that erred and staff (else ``null``).
    Expects ``match.duel`` with both players joined (the duel's prefetch sets it)."""

    replay_url = serializers.SerializerMethodField()
    error_msg = serializers.SerializerMethodField()
    error_detail = serializers.SerializerMethodField()

    class Meta:
        model = Match
        fields = [
            "id",
            "index",
            "result",
            "error_kind",
            "error_msg",
            "error_detail",
            "first_player",
            "player_1_score",
            "player_2_score",
            "replay_url",
        ]

    @staticmethod
    def _names(obj: Match) -> tuple[str, str]:
        return obj.duel.revision_1.competitor.name, obj.duel.revision_2.competitor.name

    def get_error_msg(self, obj: Match) -> str:
        """What happened, in the platform's words (no agent output)."""
        return match_sentence(obj.result, obj.error_kind, self._names(obj), len(obj.actions or []))

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_error_detail(self, obj: Match) -> str | None:
        """The referee's text (exception, traceback, stderr): the erring agent's owner and staff only."""
        request = self.context.get("request")
        d = obj.duel
        owners = (d.revision_1.competitor.owner_id, d.revision_2.competitor.owner_id)
        return match_detail(
            obj.result, obj.error_msg, getattr(request, "user", None), owners, self._names(obj)
        )

    def get_replay_url(self, obj: Match) -> str:
        """The replay JSON."""
        return _absolute(self.context, reverse("web:api:match-replay", args=[obj.pk]))


class DuelSerializer(serializers.ModelSerializer):
    """A duel's summary (the duel JSON's top-level fields)."""

    environment = serializers.CharField(source="environment.slug")
    player_1 = DuelPlayerSerializer(source="revision_1")
    player_2 = DuelPlayerSerializer(source="revision_2")
    url = serializers.SerializerMethodField()

    class Meta:
        model = Duel
        fields = [
            "id",
            "environment",
            "kind",
            "state",
            "result",
            "player_1",
            "player_2",
            "num_matches",
            "planned_matches",
            "stopped_early",
            "stop_rule",
            "player_1_wins",
            "player_2_wins",
            "draws",
            "player_1_errors",
            "player_2_errors",
            "other_errors",
            "player_1_score",
            "player_2_score",
            "created_at",
            "finished_at",
            "url",
        ]

    def get_url(self, obj: Duel) -> str:
        """The duel's page."""
        return _absolute(self.context, reverse("web:duel", args=[obj.pk]))


class DuelDetailSerializer(DuelSerializer):
    """A duel with its matches. ``error_msg``: why it could not be played, in the platform's words;
    ``error_detail``: our own error text, staff only."""

    matches = MatchBriefSerializer(many=True, read_only=True)
    error_msg = serializers.SerializerMethodField()
    error_detail = serializers.SerializerMethodField()

    class Meta(DuelSerializer.Meta):
        fields = [*DuelSerializer.Meta.fields, "error_msg", "error_detail", "matches"]

    def get_error_msg(self, obj: Duel) -> str:
        """Why the duel has no result (empty when it has one)."""
        return duel_sentence(obj.result, obj.error_msg)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_error_detail(self, obj: Duel) -> str | None:
        """Our own error text (staff only)."""
        request = self.context.get("request")
        return duel_detail(obj.error_msg, getattr(request, "user", None))


class ReplaySerializer(serializers.Serializer):
    """Everything needed to replay a match: the states after each step, actions and move times."""

    match = serializers.IntegerField()
    duel = serializers.IntegerField()
    index = serializers.IntegerField()
    environment = serializers.CharField()
    players = serializers.ListField(child=serializers.CharField())
    seats = serializers.ListField(child=serializers.CharField(), help_text="Names by seat (seat 0 first).")
    first_player = serializers.CharField()
    result = serializers.CharField()
    error_kind = serializers.CharField(allow_blank=True)
    error_msg = serializers.CharField(allow_blank=True, help_text="The platform's sentence about an error.")
    error_detail = serializers.CharField(
        allow_null=True, help_text="The referee's text: the erring agent's owner and staff only, else null."
    )
    player_1_score = serializers.FloatField()
    player_2_score = serializers.FloatField()
    result_text = serializers.CharField(help_text='The result in words, e.g. "minimax won".')
    states = serializers.ListField(
        child=serializers.JSONField(),
        help_text="states[0] is the position before the first move; states[i] follows actions[i - 1].",
    )
    actions = serializers.ListField(child=serializers.JSONField())
    moves = serializers.ListField(
        child=serializers.DictField(),
        help_text='Per action: {"player": name, "seat": 0|1, "action": id, "text": the game\'s description}.',
    )
    move_times = serializers.ListField(child=serializers.FloatField(allow_null=True))


class TokenRequestSerializer(serializers.Serializer):
    """E-mail and password."""

    email = serializers.EmailField()
    password = serializers.CharField(style={"input_type": "password"}, trim_whitespace=False)


class TokenSerializer(serializers.Serializer):
    """A new API token: send it as ``Authorization: Token <token>``. Shown once: the server keeps only its
    hash."""

    token = serializers.CharField()
    expires_at = serializers.DateTimeField(
        allow_null=True, help_text="After this, log in again; null: never."
    )
    prefix = serializers.CharField(help_text="The key's first characters, as the profile page lists it.")


class DuelReplaysSerializer(DuelSerializer):
    """A duel with every match's replay; player logs are ``null`` unless the caller owns that side."""

    error_msg = serializers.CharField()
    error_detail = serializers.CharField(allow_null=True)
    matches = ReplaySerializer(many=True)
    player_1_log = serializers.CharField(allow_null=True)
    player_2_log = serializers.CharField(allow_null=True)

    class Meta(DuelSerializer.Meta):
        fields = [
            *DuelSerializer.Meta.fields,
            "error_msg",
            "error_detail",
            "matches",
            "player_1_log",
            "player_2_log",
        ]


class ApiRootSerializer(serializers.Serializer):
    """The API's entry point: where everything is ({id} and {slug} are placeholders)."""

    docs = serializers.URLField()
    schema = serializers.URLField()
    token = serializers.URLField()
    environments = serializers.URLField()
    competitors = serializers.URLField()
    competitor_data = serializers.CharField(help_text="A competitor's data folder (owner and staff).")
    revisions = serializers.URLField()
    duels = serializers.URLField()
    challenges = serializers.URLField()
    submission_max_bytes = serializers.IntegerField(help_text="The largest agent zip accepted.")
    client = serializers.URLField(help_text="pip install this URL to get the rl-arena client.")
