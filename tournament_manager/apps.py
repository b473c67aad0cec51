"""Django app configuration for ``tournament_manager`` (management commands; no models of its own)."""

from django.apps import AppConfig


class TournamentManagerConfig(AppConfig):
    """Ratings, ladder matchmaking and tournament editions."""

    name = "tournament_manager"
    verbose_name = "RL Arena tournament manager"
