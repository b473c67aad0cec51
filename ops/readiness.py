"""Is this arena ready to serve? ``/readyz`` asks every dependency a request or an upload needs.

``/healthz`` stays the cheap liveness probe (the process answers and its database connection works);
``/readyz`` is what a load balancer, a deploy script or an operator asks before sending traffic: the
database, the broker that carries job hints, a worker that reported recently and is healthy (without one,
uploads wait forever), the agent registry when one is configured, and free space under ``DATA_DIR``.
Each check returns ``None`` when it passes or a short reason; all run, so the answer names every failure.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, connection

#: Seconds a check of a remote service may take.
CHECK_TIMEOUT_S = 2.0


def check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return f"the database does not answer: {str(exc)[:160]}"
    return None


def check_broker() -> str | None:
    url = settings.CELERY_BROKER_URL
    if url.startswith("filesystem://"):
        folder = Path(settings.BROKER_DIR)
        if not folder.is_dir():
            return f"the filesystem broker's folder {folder} does not exist"
        return None
    from core.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_S)
    except Exception as exc:  # kombu raises the transport's own errors
        return f"the broker does not answer: {type(exc).__name__}: {str(exc)[:160]}"
    return None


def check_workers() -> str | None:
    from core.actions.jobs import db_in
    from core.jobs.health import silent_after_s
    from core.models import WorkerStatus

    max_age = silent_after_s()  # the rule queue_status and scheduling use
    try:
        live = WorkerStatus.objects.filter(stopped=False, last_seen__gte=db_in(-max_age))
        if live.filter(healthy=True).exists():
            return None
        unhealthy = list(live.values_list("name", "problem")[:3])
    except DatabaseError:
        return "unknown: the database does not answer"
    if unhealthy:
        return "no healthy worker: " + "; ".join(f"{name}: {problem}" for name, problem in unhealthy)
    return f"no worker reported in the last {max_age:.0f} s: uploads and duels wait"


def check_registry() -> str | None:
    if not settings.AGENT_REGISTRY:
        return None
    from run_duel.api import RegistryConfig

    config = RegistryConfig.parse(
        settings.AGENT_REGISTRY,
        username=settings.AGENT_REGISTRY_USERNAME,
        password=settings.AGENT_REGISTRY_PASSWORD,
        api_url=settings.AGENT_REGISTRY_API_URL,
    )
    return config.ping(timeout=CHECK_TIMEOUT_S)


def check_disk() -> str | None:
    usage = shutil.disk_usage(settings.DATA_DIR)
    minimum = settings.READYZ_MIN_FREE_MB * 1024 * 1024
    if usage.free < minimum:
        return f"DATA_DIR has {usage.free // 1048576} MiB free, under {settings.READYZ_MIN_FREE_MB} MiB"
    return None


CHECKS: dict[str, Callable[[], str | None]] = {
    "database": check_database,
    "broker": check_broker,
    "workers": check_workers,
    "registry": check_registry,
    "disk": check_disk,
}


def readiness() -> dict[str, str | None]:
    """Every check's answer, by name: ``None`` passed, else why not."""
    return {name: check() for name, check in CHECKS.items()}
