"""Django admin for every model. Read-mostly: state changes go through ``core.actions`` (admin actions)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from core import actions
from core.models import (
    Build,
    Competitor,
    Duel,
    Environment,
    Match,
    Rating,
    RatingHistory,
    Revision,
    Season,
    SeasonFinalist,
    SmokeTest,
    StoredAgentData,
    Tournament,
    TournamentParticipant,
    User,
    WorkerStatus,
)


def _run_each(
    modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet, fn: Any, what: str
) -> None:
    done = 0
    for pk in queryset.values_list("pk", flat=True):
        try:
            result = fn(pk)
        except actions.ActionError as exc:
            modeladmin.message_user(request, f"{what} {pk}: {exc}", messages.WARNING)
            continue
        done += int(result is not False)
    modeladmin.message_user(request, f"{what}: {done} re-queued", messages.SUCCESS)


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = ["email", "display_name", "team", "is_staff", "is_active", "date_joined"]
    search_fields = ["email", "display_name", "team", "github"]
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Profile", {"fields": ("display_name", "team", "github", "first_name", "last_name")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)


@admin.register(Environment)
class EnvironmentAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "matches_per_duel", "smoke_test_matches", "is_active", "synced_at"]
    readonly_fields = ["synced_at"]


@admin.register(Competitor)
class CompetitorAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "environment", "status", "is_public", "next_version", "current_revision"]
    list_filter = ["environment", "status", "is_public"]
    search_fields = ["name", "owner__email"]
    list_select_related = ["owner", "environment"]
    raw_id_fields = ["owner", "current_revision"]
    readonly_fields = ["next_version", "created_at"]


@admin.register(Revision)
class RevisionAdmin(admin.ModelAdmin):
    list_display = ["pk", "competitor", "version", "state", "publish_state", "created_at"]
    list_filter = ["state", "publish_state", "competitor__environment"]
    search_fields = ["competitor__name", "competitor__owner__email", "content_hash"]
    list_select_related = ["competitor"]
    raw_id_fields = ["competitor"]
    readonly_fields = [f.name for f in Revision._meta.fields if f.name not in ("state", "error_message")]
    actions = ["rebuild", "retest"]

    @admin.action(description="Re-queue a build")
    def rebuild(self, request: HttpRequest, queryset: QuerySet) -> None:
        _run_each(self, request, queryset, actions.requeue_build, "build of revision")

    @admin.action(description="Re-queue a smoke test")
    def retest(self, request: HttpRequest, queryset: QuerySet) -> None:
        _run_each(self, request, queryset, actions.requeue_smoke_test, "smoke test of revision")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # states change through actions only


#: The claim and retry bookkeeping every job row shows (fencing token, heartbeat, backoff, retry rounds).
JOB_LIFECYCLE_FIELDS = ["generation", "heartbeat_at", "not_before", "retry_rounds"]


class JobAdmin(admin.ModelAdmin):
    """Builds, smoke tests and duels: read-only pages (state changes go through the actions)."""

    list_filter = ["state"]
    date_hierarchy = "created_at"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Build)
class BuildAdmin(JobAdmin):
    list_display = [
        "pk",
        "revision",
        "state",
        "attempts",
        *JOB_LIFECYCLE_FIELDS,
        "worker",
        "lease_expires_at",
        "duration_s",
        "created_at",
    ]
    raw_id_fields = ["revision"]
    actions = ["requeue"]

    @admin.action(description="Re-queue a build of these revisions")
    def requeue(self, request: HttpRequest, queryset: QuerySet) -> None:
        ids = queryset.values_list("revision_id", flat=True).distinct().order_by()
        _run_each(self, request, Revision.objects.filter(pk__in=ids), actions.requeue_build, "revision")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).defer("log")


@admin.register(SmokeTest)
class SmokeTestAdmin(JobAdmin):
    list_display = [
        "pk",
        "revision",
        "state",
        "passed",
        "attempts",
        *JOB_LIFECYCLE_FIELDS,
        "worker",
        "lease_expires_at",
        "created_at",
    ]
    raw_id_fields = ["revision"]
    actions = ["requeue"]

    @admin.action(description="Re-queue a smoke test of these revisions")
    def requeue(self, request: HttpRequest, queryset: QuerySet) -> None:
        ids = queryset.values_list("revision_id", flat=True).distinct().order_by()
        _run_each(self, request, Revision.objects.filter(pk__in=ids), actions.requeue_smoke_test, "revision")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).defer("duel_json", "log")


class MatchInline(admin.TabularInline):
    model = Match
    fields = ("index", "result", "error_kind", "first_player", "player_1_score", "player_2_score")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Duel)
class DuelAdmin(JobAdmin):
    list_display = [
        "pk",
        "environment",
        "kind",
        "state",
        "result",
        "attempts",
        *JOB_LIFECYCLE_FIELDS,
        "lease_expires_at",
        "rated",
        "priority",
        "created_at",
    ]
    list_filter = ["state", "kind", "environment", "rated"]
    raw_id_fields = ["revision_1", "revision_2", "tournament"]
    inlines = [MatchInline]
    actions = ["requeue"]

    @admin.action(description="Re-queue FAILED duels")
    def requeue(self, request: HttpRequest, queryset: QuerySet) -> None:
        _run_each(self, request, queryset.filter(state=Duel.State.FAILED), actions.requeue_duel, "duel")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (
            super().get_queryset(request).defer("player_1_log", "player_2_log").select_related("environment")
        )


@admin.register(WorkerStatus)
class WorkerStatusAdmin(admin.ModelAdmin):
    """Each Celery worker as its health monitor last reported it (read-only: workers write these rows)."""

    list_display = ["name", "healthy", "problem", "last_seen", "changed_at", "host", "queues", "stopped"]
    list_filter = ["healthy", "stopped", "host"]
    search_fields = ["name", "host", "problem"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(StoredAgentData)
class StoredAgentDataAdmin(admin.ModelAdmin):
    """Each competitor's data folder, for support (read-only: duels save it, its owner resets it; the
    ``reset`` action does what the owner's button does)."""

    list_display = ["competitor", "size_bytes", "files", "generation", "updated_at", "updated_by_duel"]
    search_fields = ["competitor__name", "competitor__owner__email"]
    list_select_related = ["competitor"]
    exclude = ["archive"]
    readonly_fields = [
        "competitor", "size_bytes", "files", "generation", "updated_at", "updated_by_duel", "last_problem",
        "last_problem_at",
    ]  # fmt: skip
    actions = ["reset"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).defer("archive")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Empty the data folder (as its owner's reset)")
    def reset(self, request: HttpRequest, queryset: QuerySet) -> None:
        emptied = 0
        for competitor_id in queryset.values_list("pk", flat=True):  # the primary key is the competitor's
            actions.reset_agent_data(competitor_id)
            emptied += 1
        self.message_user(request, f"{emptied} data folder(s) emptied", messages.SUCCESS)


@admin.register(Match)
class MatchAdmin(admin.ModelAdmin):
    list_display = ["pk", "duel", "index", "result", "error_kind", "first_player"]
    list_filter = ["result", "error_kind"]
    raw_id_fields = ["duel"]
    # The packed moves shown as the lists they hold (core.match_moves), where the JSON columns were.
    fields = [
        "duel",
        "index",
        "result",
        "error_kind",
        "error_msg",
        "first_player",
        "player_1_score",
        "player_2_score",
        "states",
        "match_actions",
        "match_move_times",
    ]
    readonly_fields = ["match_actions", "match_move_times"]

    @admin.display(description="actions")
    def match_actions(self, obj: Match) -> list:  # not "actions": the ModelAdmin's own attribute
        return obj.actions

    @admin.display(description="move times")
    def match_move_times(self, obj: Match) -> list:
        return obj.move_times

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["competitor", "environment", "mu", "sigma", "skill", "matches", "wins", "draws", "losses"]
    list_filter = ["environment"]
    raw_id_fields = ["competitor"]
    ordering = ["environment", "-skill"]


@admin.register(RatingHistory)
class RatingHistoryAdmin(admin.ModelAdmin):
    list_display = ["rating", "duel", "mu", "sigma", "created_at"]
    raw_id_fields = ["rating", "duel"]


class ParticipantInline(admin.TabularInline):
    model = TournamentParticipant
    raw_id_fields = ["revision"]
    extra = 0


@admin.register(Tournament)
class TournamentAdmin(admin.ModelAdmin):
    list_display = [
        "environment",
        "edition",
        "state",
        "duels_finished",
        "duels_failed",
        "duels_total",
        "created_at",
    ]
    list_filter = ["environment", "state"]
    inlines = [ParticipantInline]


class SeasonFinalistInline(admin.TabularInline):
    model = SeasonFinalist
    fields = (
        *("final_rank", "seed", "competitor", "revision", "mu", "sigma", "wins", "losses"),
        "cut_after_round",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Season)
class SeasonAdmin(admin.ModelAdmin):
    """Operators create seasons (dates, finalists); the finals are run by ``tournament_manager.seasons``."""

    list_display = ["name", "environment", "starts_at", "ends_at", "finalists", "state", "finals_round"]
    list_filter = ["environment", "state"]
    fields = ["environment", "name", "starts_at", "ends_at", "finalists", "state", "finals_round"]
    fields += ["finals_started_at", "finished_at"]
    inlines = [SeasonFinalistInline]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        done = ["state", "finals_round", "finals_started_at", "finished_at"]
        if obj is not None and obj.state != Season.State.OPEN:
            return ["environment", "name", "starts_at", "ends_at", "finalists", *done]
        return done
