"""Retention: prune what an operator chose not to keep forever, keeping every result and rating.

Three settings, each a number of days (0, the default: keep forever):

- ``RETENTION_MATCH_STATES_DAYS``: the per-move states of matches finished earlier (most of a result's
  bytes) are dropped; the actions stay, and the replay viewer replays them through the game's rules
  (``web/replays.py``), so replays still work. A game with chance keeps its first state (the deal).
  Matches recorded since ``core/match_states.py`` are stored that way already (unless the rules did not
  give their states back); this prunes the rows recorded before it.
- ``RETENTION_RETIRED_REPLAYS_DAYS``: matches finished earlier between two revisions that both stopped
  playing (neither is its competitor's current revision) lose their replay (states, actions, move times);
  results, scores, errors and ratings stay.
- ``RETENTION_UNPLAYABLE_ZIPS_DAYS``: the uploaded zips of revisions that can no longer play (failed or
  refused, or superseded by a newer current revision) and were uploaded earlier are deleted, from this
  host's ``DATA_DIR`` and from the upload store (``core.blobs``, when no other revision has the same
  bytes), unless the publisher still has to publish them or a duel of theirs is waiting or running.

``prune(dry_run=True)`` counts without changing anything (``manage.py prune_data --dry-run``). The periodic
task ``ops.prune_data`` runs it every ``RETENTION_INTERVAL_SECONDS`` when any of the three is set.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import F, Q, QuerySet
from django.utils import timezone

log = logging.getLogger(__name__)

#: Matches updated per statement.
BATCH = 500


@dataclass
class RetentionReport:
    match_states_pruned: int = 0
    replays_deleted: int = 0
    zips_deleted: int = 0
    blobs_deleted: int = 0  # uploads removed from the upload store (core.blobs)
    bytes_freed: int = 0  # JSON bytes of states, packed bytes of moves, plus zip files and stored uploads

    def __str__(self) -> str:
        return (
            f"{self.match_states_pruned} match states pruned, {self.replays_deleted} replays deleted, "
            f"{self.zips_deleted} zips deleted, {self.blobs_deleted} stored uploads deleted, "
            f"about {self.bytes_freed / 1048576:.1f} MiB freed"
        )


def _json_size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def _cutoff(days: int, now: datetime) -> datetime | None:
    return now - timedelta(days=days) if days > 0 else None


def _kept_states(states: list, actions: list, has_chance: bool) -> list | None:
    """What remains of ``states`` once pruned, or ``None`` when they cannot be pruned safely."""
    if len(actions) <= 1:  # nothing to gain, and one state could not be told from one state after a move
        return None
    if not has_chance:
        return []
    if len(states) == len(actions) + 1:  # the initial state (the deal) is stored first: keep it
        return states[:1]
    return None  # a chance game recorded without its initial state: the actions alone cannot replay it


def _prune_states(cutoff: datetime, dry_run: bool, report: RetentionReport) -> None:
    from core.actions.retention import prune_match_states
    from core.match_moves import unpack_actions
    from core.models import Environment, Match
    from environments import get_game

    for env in Environment.objects.all():
        has_chance = get_game(env.slug).has_chance
        last_id = 0
        while True:
            rows = list(
                Match.objects.filter(duel__environment=env, duel__finished_at__lt=cutoff, id__gt=last_id)
                .exclude(states=[])
                .order_by("id")
                .values_list("id", "states", "packed_moves")[:BATCH]
            )
            if not rows:
                break
            last_id = rows[-1][0]
            for match_id, states, packed in rows:
                kept = _kept_states(states or [], unpack_actions(packed), has_chance)
                if kept is None or len(kept) == len(states or []):
                    continue
                report.match_states_pruned += 1
                report.bytes_freed += _json_size(states) - _json_size(kept)
                if not dry_run:
                    prune_match_states(match_id, kept)


def _delete_retired_replays(cutoff: datetime, dry_run: bool, report: RetentionReport) -> None:
    from core.actions.retention import clear_replays
    from core.match_moves import EMPTY
    from core.models import Duel, Match

    retired = Duel.objects.filter(finished_at__lt=cutoff).exclude(
        Q(revision_1__competitor__current_revision=F("revision_1"))
        | Q(revision_2__competitor__current_revision=F("revision_2"))
    )
    last_id = 0
    while True:
        rows = list(
            Match.objects.filter(duel__in=retired, id__gt=last_id)
            .exclude(packed_moves=EMPTY, states=[])
            .order_by("id")
            .values_list("id", "states", "packed_moves")[:BATCH]
        )
        if not rows:
            break
        last_id = rows[-1][0]
        report.replays_deleted += len(rows)
        report.bytes_freed += sum(_json_size(s) + len(p) for _, s, p in rows)
        if not dry_run:
            clear_replays([r[0] for r in rows])


def _delete_unplayable_zips(cutoff: datetime, dry_run: bool, report: RetentionReport) -> None:
    from core.models import Duel, Revision

    cannot_play = Q(
        state__in=[Revision.State.BUILD_FAILED, Revision.State.TEST_FAILED, Revision.State.REJECTED]
    )
    superseded = Q(competitor__current_revision__isnull=False) & ~Q(competitor__current_revision=F("id"))
    waiting = Duel.objects.filter(state__in=[Duel.State.QUEUED, Duel.State.RUNNING])
    candidates = (
        Revision.objects.filter(created_at__lt=cutoff)
        .filter(cannot_play | superseded)
        .exclude(publish_state=Revision.PublishState.PENDING)
        .exclude(id__in=waiting.values("revision_1"))
        .exclude(id__in=waiting.values("revision_2"))
        .exclude(zip_path="")
    )
    data_dir = Path(settings.DATA_DIR).resolve()
    for revision_id, zip_path in candidates.values_list("id", "zip_path").iterator():
        path = (data_dir / zip_path).resolve()
        if not path.is_relative_to(data_dir) or not path.is_file():
            continue
        report.zips_deleted += 1
        report.bytes_freed += path.stat().st_size
        if not dry_run:
            path.unlink()
            log.info("retention: deleted the zip of revision %s (%s)", revision_id, zip_path)
    _delete_unused_blobs(candidates, dry_run, report)


def _delete_unused_blobs(candidates: QuerySet, dry_run: bool, report: RetentionReport) -> None:
    """Delete the upload store's blobs (``core.blobs``) of ``candidates`` that no other revision uses.
    Each under its row lock, re-checked: an upload reusing the blob meanwhile holds that lock
    (``blobs.put_file``) until its revision is committed, so it is seen and the blob kept."""
    from core.actions.retention import delete_unused_blob

    ids = set(candidates.values_list("id", flat=True))
    hashes = set(candidates.values_list("content_hash", flat=True))
    for sha256 in sorted(hashes):
        size = delete_unused_blob(sha256, ids, dry_run=dry_run)
        if size is None:
            continue
        report.blobs_deleted += 1
        report.bytes_freed += size
        if not dry_run:
            log.info("retention: deleted the stored upload %s (%s bytes)", sha256[:16], size)


def enabled() -> bool:
    return any(
        days > 0
        for days in (
            settings.RETENTION_MATCH_STATES_DAYS,
            settings.RETENTION_RETIRED_REPLAYS_DAYS,
            settings.RETENTION_UNPLAYABLE_ZIPS_DAYS,
        )
    )


def prune(*, dry_run: bool = False, now: datetime | None = None) -> RetentionReport:
    """Apply the retention settings (or, with ``dry_run``, only count what they would prune)."""
    now = now or timezone.now()
    report = RetentionReport()
    cutoff = _cutoff(settings.RETENTION_RETIRED_REPLAYS_DAYS, now)
    if cutoff is not None:
        _delete_retired_replays(cutoff, dry_run, report)
    cutoff = _cutoff(settings.RETENTION_MATCH_STATES_DAYS, now)
    if cutoff is not None:
        _prune_states(cutoff, dry_run, report)
    cutoff = _cutoff(settings.RETENTION_UNPLAYABLE_ZIPS_DAYS, now)
    if cutoff is not None:
        _delete_unplayable_zips(cutoff, dry_run, report)
    return report
