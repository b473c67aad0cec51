"""Celery task of seasons (found by ``core.celery``'s autodiscovery under ``related_name="season_tasks"``).

- ``tournament_manager.check_seasons()``: periodic (``SEASON_CHECK_INTERVAL_SECONDS``); starts the finals
  of ended seasons and closes finished rounds (:func:`tournament_manager.seasons.check_seasons`).
"""

from __future__ import annotations

from django.conf import settings

from core.celery import app
from tournament_manager import seasons

BEAT_SCHEDULE = {
    "tournament-manager-check-seasons": {
        "task": "tournament_manager.check_seasons",
        "schedule": float(getattr(settings, "SEASON_CHECK_INTERVAL_SECONDS", 60.0)),
    },
}
for _name, _entry in BEAT_SCHEDULE.items():
    app.conf.beat_schedule.setdefault(_name, _entry)


@app.task(name="tournament_manager.check_seasons")
def check_seasons() -> int:
    """Advance every season that has ended or is in its finals; returns how many changed."""
    return seasons.check_seasons()
