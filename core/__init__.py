"""RL Arena core: settings, models, the Celery app and ``core.actions`` (the only code that changes state)."""

from core.celery import app as celery_app

__all__ = ["celery_app"]
