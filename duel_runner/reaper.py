"""The reaper: the database, not the broker, decides what work still has to be done."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from core.actions import requeue_expired_leases, resend_stale_hints
from core.actions.play import abandon_stale_play_sessions

log = logging.getLogger(__name__)


def reap_containers() -> int:
    """Remove agent containers no live task owns (Docker sandbox only). Returns how many were removed."""
    if settings.SANDBOX != "docker":
        return 0
    try:
        from run_duel.sandbox.docker import reap_orphans

        return len(reap_orphans(settings.ORPHAN_CONTAINER_MAX_AGE_SECONDS))
    except Exception:  # the engine may be restarting; try again next round
        log.exception("could not reap orphan containers")
        return 0


def reap() -> dict[str, Any]:
    """One round: re-queue jobs whose lease expired, re-send lost hints, remove orphan containers, close
    live games nobody drives any more."""
    expired = requeue_expired_leases()
    resent = resend_stale_hints()
    containers = reap_containers()
    stale_games = abandon_stale_play_sessions()  # live games whose worker died
    return {
        "expired": expired,
        "resent": resent,
        "containers_removed": containers,
        "stale_play_sessions": stale_games,
    }
