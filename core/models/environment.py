"""Environments (games), mirrored from ``environments/*/info.yml`` by ``manage.py sync_environments``."""

from __future__ import annotations

from django.db import models


class Environment(models.Model):
    """One game of the arena. Its rules live in ``environments/<package>/``; this row is its catalogue."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=100)
    description = models.TextField(blank=True, help_text="Markdown rules shown to users.")
    matches_per_duel = models.PositiveIntegerField()
    smoke_test_matches = models.PositiveIntegerField()
    move_time_limit = models.FloatField(help_text="Seconds per move.")
    init_time_limit = models.FloatField(help_text="Seconds to import player.py and build the Player.")
    memory_limit_mb = models.PositiveIntegerField()
    cpu_limit = models.FloatField()
    is_active = models.BooleanField(default=True, help_text="False once its folder is gone.")
    synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.slug
