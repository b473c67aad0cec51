"""Mirroring the games in ``environments/`` into Environment rows."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.utils import timezone

from core.models import Environment

_FIELDS = (
    "name",
    "description",
    "matches_per_duel",
    "smoke_test_matches",
    "move_time_limit",
    "init_time_limit",
    "memory_limit_mb",
    "cpu_limit",
)


def sync_environments(infos: Iterable[dict[str, Any]], *, deactivate_missing: bool = True) -> dict[str, str]:
    """Create or update one Environment per game description (``slug`` plus the fields of ``info.yml``);
    games no longer present are deactivated (never deleted: duels refer to them). Returns slug -> what
    happened ("created", "updated", "unchanged", "deactivated")."""
    now = timezone.now()
    report: dict[str, str] = {}
    with transaction.atomic():
        seen = set()
        for info in infos:
            slug = info["slug"]
            seen.add(slug)
            values = {f: info[f] for f in _FIELDS}
            env = Environment.objects.select_for_update().filter(slug=slug).first()
            if env is None:
                Environment.objects.create(slug=slug, synced_at=now, is_active=True, **values)
                report[slug] = "created"
                continue
            changed = [f for f, v in values.items() if getattr(env, f) != v]
            if not env.is_active:
                changed.append("is_active")
                env.is_active = True
            for f in changed:
                if f != "is_active":
                    setattr(env, f, values[f])
            env.synced_at = now
            env.save(update_fields=[*changed, "synced_at"])
            report[slug] = "updated" if changed else "unchanged"
        if deactivate_missing:
            for env in Environment.objects.filter(is_active=True).exclude(slug__in=seen):
                env.is_active = False
                env.save(update_fields=["is_active"])
                report[env.slug] = "deactivated"
    return report
