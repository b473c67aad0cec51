"""Helpers of the records suite: run queued Celery messages in this process; build revisions and duels."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from core.models import Build, Competitor, Revision, SmokeTest


def use_memory_broker() -> None:
    """Send task hints to Kombu's in-process memory transport."""
    from core.celery import app

    app.conf.broker_url = "memory://"
    app.conf.broker_transport_options = {}
    app._pool = None
    app.amqp._producer_pool = None


def drain_broker(run: tuple[str, ...] = ()) -> list[tuple[str, list[Any]]]:
    """Take every queued message off the broker; run those whose task name is in ``run`` with the real
    registered task (as a worker would). Returns (task name, args) of every message taken."""
    import core.tasks  # noqa: F401  (registers core.send_notification_email)
    from core.celery import app

    taken: list[tuple[str, list[Any]]] = []
    with app.connection_for_write() as conn:
        queue = conn.SimpleQueue(settings.CELERY_TASK_DEFAULT_QUEUE)
        try:
            while True:
                try:
                    message = queue.get(block=False)
                except queue.Empty:
                    break
                name = message.headers["task"]
                args = list(message.payload[0])
                message.ack()
                taken.append((name, args))
                if name in run:
                    app.tasks[name](*args)
        finally:
            queue.close()
    return taken


def run_email_tasks() -> int:
    """Run every queued ``core.send_notification_email`` message; returns how many there were."""
    return sum(
        name == "core.send_notification_email" for name, _ in drain_broker(("core.send_notification_email",))
    )


def uploaded_revision(owner: Any, env: Any, name: str = "bot") -> Revision:
    """A revision waiting for its build (a QUEUED build row), as ``submit_revision`` leaves it."""
    comp = Competitor.objects.create(owner=owner, environment=env, name=name, next_version=2)
    rev = Revision.objects.create(
        competitor=comp, version=1, zip_path="submissions/x.zip", zip_size=10, content_hash="0" * 64
    )
    Build.objects.create(revision=rev)
    return rev


def built_revision(owner: Any, env: Any, name: str = "bot") -> tuple[Revision, SmokeTest]:
    """A BUILT revision with its QUEUED smoke test."""
    rev = uploaded_revision(owner, env, name)
    Build.objects.filter(revision=rev).update(state=Build.State.SUCCEEDED)
    Revision.objects.filter(pk=rev.pk).update(state=Revision.State.BUILT, agent_ref="local:x")
    rev.refresh_from_db()
    return rev, SmokeTest.objects.create(revision=rev)
