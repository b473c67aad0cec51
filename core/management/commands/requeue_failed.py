"""``manage.py requeue_failed``: give FAILED builds, smoke tests and duels fresh attempts."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from core.actions import requeue_failed


class Command(BaseCommand):
    help = "Re-queue jobs that failed because of infrastructure errors (after fixing the cause)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--include-submission-faults",
            action="store_true",
            help="Also rebuild builds the submission broke.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        counts = requeue_failed(include_submission_faults=options["include_submission_faults"])
        self.stdout.write(", ".join(f"{kind}: {n}" for kind, n in counts.items()))
