"""The writes of retention (``ops.retention`` decides what to prune; these change the rows): a match's
states thinned, retired replays cleared, an upload nobody uses deleted from the store. Results, scores,
errors and ratings are never touched."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from core.match_moves import EMPTY
from core.models import Blob, Match, Revision


def prune_match_states(match_id: int, kept: list) -> None:
    """Keep only ``kept`` of match ``match_id``'s recorded states (its actions stay: replays replay them)."""
    Match.objects.filter(id=match_id).update(states=kept)


def clear_replays(match_ids: list[int]) -> int:
    """Drop the replays (states, actions, move times) of these matches; returns how many rows changed."""
    return Match.objects.filter(id__in=match_ids).update(states=[], packed_moves=EMPTY)


def delete_unused_blob(sha256: str, leaving: Iterable[int], *, dry_run: bool = False) -> int | None:
    """Delete the upload store's blob ``sha256`` unless a revision other than ``leaving`` (ids) still uses
    it; returns its size, or ``None`` when it is kept (or gone). Under the blob's row lock, re-checked: an
    upload reusing the blob holds that lock (``core.blobs.put_file``) until its revision is committed, so
    it is seen and the blob kept. ``dry_run``: the same answer, nothing deleted."""
    with transaction.atomic():
        blob = Blob.objects.select_for_update().filter(pk=sha256).first()
        if (
            blob is None
            or Revision.objects.filter(content_hash=sha256).exclude(id__in=list(leaving)).exists()
        ):
            return None
        if not dry_run:
            blob.delete()
        return blob.size
