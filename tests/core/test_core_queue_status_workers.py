"""``queue_status`` never shows a stopped or silent worker as healthy (issue 28: a first-run worker that
died on its broker was listed "healthy, stopped")."""

from __future__ import annotations

import json
from io import StringIO

from django.core.management import call_command

from core.actions.jobs import db_in
from core.actions.workers import report_worker_status
from core.jobs import health
from core.models import WorkerStatus


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_stopped_and_silent_workers_are_never_reported_healthy(db, settings):
    for name in ("running@a", "stopped@b", "silent@c"):
        report_worker_status(name, healthy=True, problem="", queues=["arena"], slots=2)
    report_worker_status("stopped@b", healthy=True, problem="", queues=["arena"], stopped=True, slots=2)
    WorkerStatus.objects.filter(name="silent@c").update(last_seen=db_in(-10 * health.silent_after_s()))
    workers = {w["name"]: w for w in json.loads(run("queue_status", "--json"))["workers"]}
    assert {name: (w["healthy"], w["reporting"]) for name, w in workers.items()} == {
        "running@a": (True, True),
        "stopped@b": (False, False),
        "silent@c": (False, False),
    }
    text = run("queue_status")
    assert "running@a: healthy;" in text
    assert "stopped@b: stopped;" in text
    assert "silent@c: not reporting (it may have died);" in text
    assert health.live_slots() == 2  # only the running worker's slots are capacity
