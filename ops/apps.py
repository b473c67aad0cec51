"""The ops app: its management commands (``backup``, ``restore``, ``prune_data``), and Sentry started once
Django is set up (in the web, the workers and every command) when ``SENTRY_DSN`` is set."""

from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings


class OpsConfig(AppConfig):
    name = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        if settings.SENTRY_DSN:
            from ops.error_reports import init_sentry

            init_sentry(
                settings.SENTRY_DSN, environment=settings.SENTRY_ENVIRONMENT, release=settings.SENTRY_RELEASE
            )
