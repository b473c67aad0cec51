"""Competitors (a user's named agent in one environment) and their numbered revisions."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

NAME_VALIDATOR = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
    "Use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit.",
)


class Competitor(models.Model):
    """A user's agent in one environment. Its rating follows it across revisions."""

    class Status(models.TextChoices):
        ACTIVE = "ACTIVE", "active"
        PAUSED = "PAUSED", "paused"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="competitors")
    environment = models.ForeignKey("core.Environment", on_delete=models.PROTECT, related_name="competitors")
    name = models.CharField(max_length=64, validators=[NAME_VALIDATOR])
    is_public = models.BooleanField(default=False, help_text="Publish the sources of new revisions.")
    next_version = models.PositiveIntegerField(default=1, help_text="Version number of the next upload.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    pause_reason = models.TextField(blank=True)
    current_revision = models.ForeignKey(
        "core.Revision",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Newest ELIGIBLE revision: the one that plays.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "environment", "name"], name="core_competitor_unique_name"
            )
        ]
        indexes = [
            models.Index(
                fields=["environment"],
                name="core_comp_env_playable",
                condition=Q(status="ACTIVE", current_revision__isnull=False),
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.environment_id})"


class Revision(models.Model):
    """One uploaded zip of a competitor, numbered 1, 2, ... per competitor.

    ::

        UPLOADED ─► BUILDING ─► BUILT ─► TESTING ─► ELIGIBLE
                       │                   └──────► TEST_FAILED
                       └──► BUILD_FAILED
        (REJECTED: refused by an operator or a later check; invalid zips are refused before a row exists)
    """

    class State(models.TextChoices):
        UPLOADED = "UPLOADED", "uploaded"
        BUILDING = "BUILDING", "building"
        BUILT = "BUILT", "built"
        BUILD_FAILED = "BUILD_FAILED", "build failed"
        TESTING = "TESTING", "testing"
        ELIGIBLE = "ELIGIBLE", "eligible"
        TEST_FAILED = "TEST_FAILED", "test failed"
        REJECTED = "REJECTED", "rejected"

    class PublishState(models.TextChoices):
        PRIVATE = "PRIVATE", "private"
        PENDING = "PENDING", "to publish"
        PUBLISHED = "PUBLISHED", "published"
        FAILED = "FAILED", "publishing failed"
        REFUSED = "REFUSED", "not publishable"  # its files cannot go to git (publisher): never retried

    class AgentFormat(models.TextChoices):
        """The values of ``run_duel.agent_formats.FORMATS``."""

        NATIVE = "native", "native (this arena's Player)"
        KAGGLE = "kaggle", "Kaggle agent"
        RL_ARENA = "rl-arena", "rl-arena (the original project's Player)"

    competitor = models.ForeignKey(Competitor, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.UPLOADED)
    zip_path = models.CharField(max_length=500, help_text="Relative to DATA_DIR.")
    zip_size = models.PositiveBigIntegerField(default=0)
    content_hash = models.CharField(max_length=64, help_text="sha256 of the zip.")
    agent_ref = models.CharField(max_length=500, blank=True, help_text="Image tag or folder that runs it.")
    image_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Size of its Docker image (as the engine reports it); None: unknown."
    )
    language = models.CharField(
        max_length=16,
        blank=True,
        help_text="python, cpp or javascript (from its entry file); set once built.",
    )
    packages = models.JSONField(
        default=list, blank=True, help_text="[name, version] of each package installed from requirements.txt."
    )
    package_notes = models.JSONField(
        default=list,
        blank=True,
        help_text="About its packages: environment.yml pins relaxed, entries left out, the stack used.",
    )
    stack = models.CharField(
        max_length=100, blank=True, help_text='The shared stack its image builds on ("torch 2.13.0+cpu").'
    )
    added_bytes = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="What its image adds to the shared base or stack; None: unknown."
    )
    agent_format = models.CharField(
        max_length=16,
        choices=AgentFormat.choices,
        default=AgentFormat.NATIVE,
        help_text="Which adapter runs it (run_duel.agent_formats): detected at upload unless chosen.",
    )
    agent_format_detected = models.BooleanField(
        default=True, help_text="True: the format was detected from the upload; False: the owner chose it."
    )
    error_message = models.TextField(blank=True, help_text="Why it failed, shown to the owner.")
    is_public = models.BooleanField(default=False)
    wipe_data = models.BooleanField(
        default=False, help_text="Start with an empty data folder when this revision starts playing."
    )
    publish_state = models.CharField(
        max_length=10, choices=PublishState.choices, default=PublishState.PRIVATE
    )
    created_at = models.DateTimeField(auto_now_add=True)
    built_at = models.DateTimeField(null=True, blank=True)
    tested_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["competitor", "version"], name="core_revision_unique_version")
        ]
        indexes = [
            models.Index(fields=["state", "created_at"], name="core_rev_state_created"),
            models.Index(
                fields=["created_at"], name="core_rev_to_publish", condition=Q(publish_state="PENDING")
            ),
        ]
        ordering = ["competitor_id", "-version"]

    def __str__(self) -> str:
        return f"competitor {self.competitor_id} v{self.version}"
