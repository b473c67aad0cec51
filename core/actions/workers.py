"""A worker's own row of ``WorkerStatus``: written by its monitor (``core.worker``) every health interval."""

from __future__ import annotations

import socket
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now

from core.models import WorkerStatus


def report_worker_status(
    name: str, *, healthy: bool, problem: str, queues: list[str], stopped: bool = False, slots: int = 0
) -> None:
    """Write worker ``name``'s row of ``WorkerStatus`` (database time); ``changed_at`` moves only when its
    health changed."""
    values: dict[str, Any] = {
        "host": socket.gethostname(),
        "sandbox": settings.SANDBOX,
        "queues": ",".join(queues)[:500],
        "problem": problem,
        "last_seen": Now(),
        "stopped": stopped,
        "slots": slots,
    }
    with transaction.atomic():
        if WorkerStatus.objects.filter(name=name, healthy=healthy).update(**values):
            return
        if WorkerStatus.objects.filter(name=name).update(healthy=healthy, changed_at=Now(), **values):
            return
        WorkerStatus.objects.create(name=name, healthy=healthy, changed_at=Now(), **values)
