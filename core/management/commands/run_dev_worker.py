"""``manage.py run_dev_worker``: one Celery worker with the beat scheduler embedded (development)."""

from __future__ import annotations

import os
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def dev_queues() -> list[str]:
    """The control plane's queue, the default queue, then the publisher's and live games' queues when
    they are named (once each): in development one worker serves them all."""
    queues = [
        settings.CONTROL_QUEUE,
        settings.CELERY_TASK_DEFAULT_QUEUE,
        settings.PUBLISHER_QUEUE,
        settings.LIVE_PLAY_QUEUE,
    ]
    return list(dict.fromkeys(queue for queue in queues if queue))


class Command(BaseCommand):
    help = (
        "Exec `celery -A core worker -B` (worker + periodic reaper) with the configured concurrency, "
        "consuming every configured queue (default, publisher, live games)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-beat", action="store_true", help="Run beat elsewhere (production).")
        parser.add_argument(
            "--control",
            action="store_true",
            help="Consume only CONTROL_QUEUE (the reaper, ratings, matchmaking), with beat unless --no-beat: "
            "the control plane's own consumer, so it never waits behind job hints.",
        )
        parser.add_argument("--loglevel", default="info")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["control"]:
            if not settings.CONTROL_QUEUE:
                raise CommandError("--control needs CONTROL_QUEUE (e.g. CONTROL_QUEUE=control)")
            argv = [sys.executable, "-m", "celery", "-A", "core", "worker", "--loglevel", options["loglevel"]]
            argv += ["--concurrency", "1", "-Q", settings.CONTROL_QUEUE, "--hostname", "control@%h"]
            if not options["no_beat"]:
                argv.append("--beat")
            os.execv(sys.executable, argv)  # noqa: S606 - fixed argv, no shell
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
