"""Periodic operations tasks (autodiscovered by ``core.celery``)."""

from __future__ import annotations

import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="ops.prune_data", ignore_result=True)
def prune_data() -> str:
    """Apply the retention settings (``ops/retention.py``); a no-op when none is set."""
    from ops.retention import enabled, prune

    if not enabled():
        return "retention off"
    report = prune()
    log.info("retention: %s", report)
    return str(report)
