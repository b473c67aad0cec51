"""Recording what the image collector (``duel_runner.image_gc``) measured: each revision's image size."""

from __future__ import annotations

from django.db import transaction

from core.models import Revision


def record_image_sizes(sizes: dict[int, int]) -> int:
    """Store ``revision id -> image bytes`` (the engine's size of the revision's image); returns how many
    rows changed. Sizes only grow more accurate: a value is replaced, never cleared, so a removed image's
    size stays on its revision's page."""
    changed = 0
    with transaction.atomic():
        for revision_id, size in sorted(sizes.items()):
            rows = Revision.objects.filter(pk=revision_id).exclude(image_bytes=size)
            changed += rows.update(image_bytes=size)
    return changed
