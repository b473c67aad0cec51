"""The Celery application ``rl_arena``.

Celery carries hints; the database holds the truth. Messages are JSON, carry only ids, are acknowledged
late (after the task returns) and are rejected back to the queue if the worker process dies. Tasks claim
their row with a conditional UPDATE, so a duplicate or late delivery is a harmless no-op, and a periodic
reaper (``duel_runner.reap``) re-queues work whose lease expired, from the database.

Run everything in one process (embedded default): ``celery -A core worker -B -l info``.
"""

from __future__ import annotations

import os

from celery import Celery
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

# The embedded broker (filesystem://) writes each message atomically (core/broker_fs.py).
TRANSPORT_ALIASES["filesystem"] = "core.broker_fs:Transport"

app = Celery("rl_arena")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    event_serializer="json",
    task_ignore_result=True,
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    task_track_started=False,
    # Imported by worker and beat processes only, when they start (never by the web): the worker's
    # health monitor step and the hint kept across database errors (core/worker.py).
    imports=("core.worker",),
)
# Celery's Django fix-up closes every database connection before and after each task unless this (old-style)
# setting is given; with it the fix-up leaves them to core/worker.py's handlers, which close them as Django
# closes a request's (DATABASE_CONN_MAX_AGE, health checks), so a worker keeps its connection across tasks.
# Read once, by the fix-up, when a worker starts.
app.conf.update(CELERY_DB_REUSE_MAX=2**62)
# Task modules of every package that has one; a package without ``tasks.py`` (yet) is skipped.
app.autodiscover_tasks(["core", "builder", "duel_runner", "tournament_manager", "publisher", "ops"])
# The agent image collector's periodic task (duel_runner/image_gc.py).
app.autodiscover_tasks(["duel_runner"], related_name="image_gc")
# Seasons and their finals (tournament_manager/season_tasks.py).
app.autodiscover_tasks(["tournament_manager"], related_name="season_tasks")
