"""Django app configuration for ``core``."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    """Models, admin and management commands of the platform core."""

    name = "core"
    verbose_name = "RL Arena core"
    default_auto_field = "django.db.models.BigAutoField"
