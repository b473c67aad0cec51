"""``manage.py run_dev_worker``: one Celery worker with the beat scheduler embedded (development)."""

from __future__ import annotations

import os
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


def dev_queues() -> list[str]:
    """The default queue, then the publisher's and live games' queues when they are named (once each):
    in development one worker serves them all."""
    queues = [settings.CELERY_TASK_DEFAULT_QUEUE, settings.PUBLISHER_QUEUE, settings.LIVE_PLAY_QUEUE]
    return list(dict.fromkeys(queue for queue in queues if queue))


class Command(BaseCommand):
    help = (
        "Exec `celery -A core worker -B` (worker + periodic reaper) with the configured concurrency, "
        "consuming every configured queue (default, publisher, live games)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-beat", action="store_true", help="Run beat elsewhere (production).")
        parser.add_argument("--loglevel", default="info")

    def handle(self, *args: Any, **options: Any) -> None:
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "core",
            "worker",
            "--loglevel",
            options["loglevel"],
            "--concurrency",
            str(settings.CELERY_WORKER_CONCURRENCY),
            "-Q",
            ",".join(dev_queues()),
        ]
        if not options["no_beat"]:
            argv.append("--beat")
        os.execv(sys.executable, argv)  # noqa: S606 - fixed argv, no shell
