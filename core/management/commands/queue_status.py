"""``manage.py queue_status``: what the database says is queued, running, expired, finished."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand
from django.db.models import Count, Min
from django.utils import timezone

from core.models import Build, Duel, Revision, SmokeTest
from core.queue import broker_queue_size


def queue_status() -> dict[str, Any]:
    """Counts per state, oldest queued age (s) and expired leases for each job kind, revision states,
    and the broker's queue length (``None`` if unknown)."""
    now = timezone.now()
    status: dict[str, Any] = {}
    for model in (Build, SmokeTest, Duel):
        states = dict(model.objects.values_list("state").annotate(n=Count("pk")).order_by())
        oldest = model.objects.filter(state="QUEUED").aggregate(t=Min("enqueued_at"))["t"]
        status[model._meta.model_name] = {
            "states": states,
            "oldest_queued_s": round((now - oldest).total_seconds(), 1) if oldest else None,
            "expired_leases": model.objects.filter(state="RUNNING", lease_expires_at__lt=now).count(),
        }
    status["revisions"] = dict(Revision.objects.values_list("state").annotate(n=Count("pk")).order_by())
    status["broker_queue"] = broker_queue_size()
    return status


class Command(BaseCommand):
    help = "Show job counts per state, the oldest queued job's age and expired leases."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        status = queue_status()
        if options["json"]:
            self.stdout.write(json.dumps(status, indent=2, sort_keys=True))
            return
        for kind in ("build", "smoketest", "duel"):
            s = status[kind]
            states = " ".join(f"{k}={v}" for k, v in sorted(s["states"].items())) or "none"
            oldest, expired = s["oldest_queued_s"], s["expired_leases"]
            self.stdout.write(f"{kind:10} {states}; oldest queued: {oldest}s; expired leases: {expired}")
        self.stdout.write(
            "revisions  " + (" ".join(f"{k}={v}" for k, v in sorted(status["revisions"].items())) or "none")
        )
        self.stdout.write(f"broker queue length: {status['broker_queue']}")
