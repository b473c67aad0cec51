"""Django app configuration for the web platform."""

from django.apps import AppConfig


class WebConfig(AppConfig):
    """Pages, forms, templates, static files and the JSON API."""

    name = "web"
    verbose_name = "RL Arena web"
    default_auto_field = "django.db.models.BigAutoField"
