"""Celery tasks of the publisher: ``publisher.publish_revision(revision_id)`` and the periodic
``publisher.sweep`` that publishes every due revision (new public ones, and failed ones to retry)."""

from __future__ import annotations

from django.conf import settings

from core.celery import app
from publisher import actions

BEAT_SCHEDULE = {
    "publisher-sweep": {
        "task": "publisher.sweep",
        "schedule": float(getattr(settings, "PUBLISH_SWEEP_INTERVAL_SECONDS", 60.0)),
    }
}
for _name, _entry in BEAT_SCHEDULE.items():
    app.conf.beat_schedule.setdefault(_name, _entry)


@app.task(name="publisher.publish_revision")
def publish_revision(revision_id: int) -> str:
    """Publish one revision if it should be; returns its publish state."""
    return actions.publish_revision(revision_id)


@app.task(name="publisher.sweep")
def sweep() -> int:
    """Publish every due revision; returns how many are now PUBLISHED."""
    return sum(state == "PUBLISHED" for state in actions.publish_due().values())
