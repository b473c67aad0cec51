"""``manage.py run_dev_worker``: one Celery worker with the beat scheduler embedded (development)."""

from __future__ import annotations

import os
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Exec `celery -A core worker -B` (worker + periodic reaper) with the configured concurrency."

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
            settings.CELERY_TASK_DEFAULT_QUEUE,
        ]
        if not options["no_beat"]:
            argv.append("--beat")
        os.execv(sys.executable, argv)  # noqa: S606 - fixed argv, no shell
