"""RL Arena core: settings, models, the Celery app and ``core.actions`` (state changes: the write rule in
``core/README.md``)."""

from core.celery import app as celery_app

__all__ = ["celery_app"]
