"""Each competitor's persistent data folder (``StoredAgentData``): load, save after a duel, reset, wipe.

The folder travels as an uncompressed tar (``run_duel.agent_data``). A duel reads ``(archive,
generation)`` before it plays (:func:`load_agent_data`); at its end the referee reads back the folder of
each agent still running, and the duel's result and those folders are stored in one transaction
(:func:`record_duel_with_data`):

- **Fenced**: a save needs the duel's claim to be current, exactly as ``record_duel_result`` (a worker
  that lost its duel to another claim writes nothing, neither result nor data).
- **Compare-and-set**: a save needs the stored generation to be the one read before play. Every save and
  every reset bumps it, so a reset by the owner, a wipe for a new revision or another duel's save made
  while this duel ran wins: this duel's folder is dropped and ``last_problem`` says why (unless both
  folders were empty: then nothing was lost and nothing is noted, so an agent that never uses its folder
  never reads about it).
- **Capped**: the archive is checked (``run_duel.agent_data.check_archive``) against the cap of the
  game (``AGENT_DATA_MB``, or the game's ``data_mb``); a bad one is refused, never the duel.

Rows are created on first write (``INSERT ... ON CONFLICT DO NOTHING``, then ``SELECT ... FOR UPDATE``),
so concurrent first saves serialise on the row like later ones. Locks: a data row only after its
competitor's row (as the wipe in ``finish_smoke_test`` and ``pause_if_erring`` do), and a transaction that
saves several competitors' folders takes them in competitor-id order: no deadlock with either.
"""

from __future__ import annotations

import logging
import tarfile
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.actions.duels import ACCEPTS_RESULT, record_duel_result
from core.actions.jobs import Claim, lock_claimed
from core.models import Competitor, Duel, Revision, StoredAgentData

log = logging.getLogger(__name__)

#: One MiB: ``AGENT_DATA_MB`` and a game's ``data_mb`` count in these.
MB = 1024 * 1024


@dataclass(frozen=True)
class DataSave:
    """What one seat's folder became after a duel: ``archive`` to store (``None``: nothing was read
    back), else ``problem``, the referee's sentence saying why. ``generation`` is the stored generation
    read before the duel (:func:`load_agent_data`)."""

    competitor_id: int
    generation: int
    archive: bytes | None = None
    problem: str = ""


def data_cap_mb(environment_slug: str) -> int:
    """The data folder's cap for agents of this game, in MiB: the game's ``data_mb`` (``info.yml``) or
    ``AGENT_DATA_MB``; 0 when ``AGENT_DATA_MB`` is 0 (no folder at all, whatever the game says). The same
    rule the referee applies (``run_duel.referee.limits_for``)."""
    base = settings.AGENT_DATA_MB
    if base <= 0:
        return 0
    # Lazily, like agent_uploads in submit_revision: the rule and the game's info.yml live there.
    from environments import UnknownGameError, get_info
    from run_duel.api import Limits, limits_for

    try:
        info = get_info(environment_slug)
    except UnknownGameError:  # a game no longer installed: the platform's cap
        return base
    return limits_for(info, Limits(data_mb=base)).data_mb


def count_files(archive: bytes) -> int:
    """Regular files in a data archive (folders not counted); 0 for ``b""``."""
    from run_duel.api import files_of

    return len(files_of(archive))


def empty_archive() -> bytes:
    """A valid tar of an empty folder (what a download of an empty folder gets)."""
    from run_duel.api import archive_of

    return archive_of({})


def load_agent_data(competitor_id: int) -> tuple[bytes, int]:
    """The competitor's folder as a tar (``b""``: empty) and its generation (0 when never written), read
    before a duel; the save after it presents that generation."""
    row = StoredAgentData.objects.filter(competitor_id=competitor_id).values("archive", "generation").first()
    if row is None:
        return b"", 0
    return bytes(row["archive"]), int(row["generation"])


def load_playable_data(competitor_id: int, environment_slug: str) -> tuple[bytes, int]:
    """What an agent of this competitor starts a duel or a live game with: :func:`load_agent_data`, unless
    the stored folder no longer fits the game's cap (``AGENT_DATA_MB`` or the game's ``data_mb`` was
    lowered since it was saved): then an empty folder, noted for the owner. The generation stays, so what
    the agent leaves at the end of the duel replaces the folder."""
    from run_duel.api import DataError, check_archive

    archive, generation = load_agent_data(competitor_id)
    if archive:
        cap_mb = data_cap_mb(environment_slug)
        try:
            check_archive(archive, cap_mb * MB)
        except DataError as exc:
            note_agent_data_problem(
                competitor_id,
                f"the stored folder no longer fits this game's data folder ({exc}): the agent starts with an "
                "empty one until a duel saves a new one",
            )
            return b"", generation
    return archive, generation


def _lock_row(competitor_id: int) -> StoredAgentData:
    """The competitor's row, created empty if missing, locked by the caller's transaction, after the
    competitor's own row: the order of ``finish_smoke_test`` (which wipes with the competitor locked) and
    of ``record_duel_result`` (whose ``pause_if_erring`` locks it after the folders are saved)."""
    list(Competitor.objects.select_for_update().filter(pk=competitor_id).values_list("pk", flat=True))
    StoredAgentData.objects.bulk_create([StoredAgentData(competitor_id=competitor_id)], ignore_conflicts=True)
    return StoredAgentData.objects.select_for_update().defer("archive").get(competitor_id=competitor_id)


_CONTENT_FIELDS = ["archive", "size_bytes", "files", "generation", "updated_at"]


def _note(row: StoredAgentData, problem: str) -> None:
    row.last_problem = problem.strip()[:2000]
    row.last_problem_at = timezone.now()
    row.save(update_fields=["last_problem", "last_problem_at"])


def _has_files(archive: bytes) -> bool:
    try:
        return bool(archive) and count_files(archive) > 0
    except (ValueError, EOFError, tarfile.TarError):
        return True  # something the agent left, unreadable: worth a remark


def save_agent_data(claim: Claim, competitor_id: int, generation: int, archive: bytes, duel_id: int) -> bool:
    """Store ``archive`` as the competitor's folder, read back at the end of duel ``duel_id`` (held by
    ``claim``), if the claim is still current and the stored generation is still ``generation``.

    ``False`` when nothing was written: a stale claim (nothing noted: the duel is not this worker's), or
    a lost compare-and-set or an archive over the cap (``last_problem`` says which)."""
    from run_duel.api import DataError, check_archive

    slug = Competitor.objects.filter(pk=competitor_id).values_list("environment__slug", flat=True).first()
    if slug is None:
        return False
    cap_mb = data_cap_mb(slug)
    problem = ""
    size = files = 0
    if cap_mb <= 0:
        if not _has_files(archive):  # an empty folder lost nothing: not worth a remark
            return False
        problem = f"duel {duel_id}: data folders are turned off on this arena, so nothing was saved"
    else:
        try:
            size, entries = check_archive(archive, cap_mb * MB)
            files = count_files(archive)
            archive = archive if entries else b""  # an empty folder is stored as nothing
        except (DataError, ValueError, EOFError, tarfile.TarError) as exc:  # never fail the duel over it
            problem = f"duel {duel_id}: the folder it left was refused ({exc}); it keeps what it had before"
    with transaction.atomic():
        if lock_claimed(Duel, claim, states=ACCEPTS_RESULT) is None:
            return False
        row = _lock_row(competitor_id)
        if not problem and row.generation != generation:
            if not archive and not row.size_bytes:  # empty then, empty now: nothing was lost
                return False
            problem = (
                f"duel {duel_id}: the files your agent left in its data folder were not kept, because "
                "while this duel ran the folder was reset or another duel of this agent saved its own "
                "(the newer folder wins)"
            )
        if problem:
            _note(row, problem)
            return False
        row.archive = archive
        row.size_bytes = size
        row.files = files
        row.generation = generation + 1
        row.updated_at = timezone.now()
        row.updated_by_duel_id = duel_id
        row.save(update_fields=[*_CONTENT_FIELDS, "updated_by_duel"])
    return True


def note_agent_data_problem(competitor_id: int, problem: str) -> None:
    """Record why a duel could not save the competitor's folder (shown to its owner); the content and
    the generation stay."""
    with transaction.atomic():
        _note(_lock_row(competitor_id), problem)


def _reset_locked(competitor_id: int) -> StoredAgentData:
    row = _lock_row(competitor_id)
    row.archive = b""
    row.size_bytes = 0
    row.files = 0
    row.generation += 1
    row.updated_at = timezone.now()
    row.updated_by_duel = None
    row.last_problem = ""
    row.last_problem_at = None
    row.save(update_fields=[*_CONTENT_FIELDS, "updated_by_duel", "last_problem", "last_problem_at"])
    return row


def reset_agent_data(competitor_id: int) -> StoredAgentData:
    """Empty the competitor's folder (owner's request). The generation is bumped, so a duel running now
    cannot write older content back when it ends."""
    with transaction.atomic():
        return _reset_locked(competitor_id)


def wipe_for_playing_revision(competitor: Competitor, revision: Revision) -> bool:
    """Inside the transaction that makes ``revision`` the competitor's playing revision: empty the folder
    if the revision asked for it (``Revision.wipe_data``). Returns whether it did."""
    if not revision.wipe_data:
        return False
    _reset_locked(competitor.pk)
    log.info("competitor %s: data folder emptied for revision %s", competitor.pk, revision.pk)
    return True


def record_duel_with_data(claim: Claim, duel_json: dict[str, Any], saves: list[DataSave]) -> bool:
    """Store a duel's result (``record_duel_result``) and what each saving seat left in its data folder,
    in one transaction: both or neither. ``False`` (nothing written) if the claim is stale or the duel
    already has a result. A seat with a ``problem`` and no archive gets it noted."""
    with transaction.atomic():
        if lock_claimed(Duel, claim, states=ACCEPTS_RESULT) is None:
            return False
        for save in sorted(saves, key=lambda s: s.competitor_id):  # one lock order: no deadlock
            saved = save.archive is not None and save_agent_data(
                claim, save.competitor_id, save.generation, save.archive, claim.job_id
            )
            # Not read back (the agent had stopped), or saved with a remark (links left out...); a
            # refused save noted its own reason.
            if save.problem and (saved or save.archive is None):
                note_agent_data_problem(save.competitor_id, f"duel {claim.job_id}: {save.problem}")
        return record_duel_result(claim, duel_json)
