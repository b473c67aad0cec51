"""Results that could not be stored yet, kept on the worker's disk until the database takes them.

A finished duel (or build, or smoke test) is minutes of work. When the database stays unreachable longer
than ``core.db.retry_on_db_error`` waits, the outcome is written here, under ``DATA_DIR/spool``, as one
JSON file per claim, atomically (temporary file, fsync, rename). The worker's monitor and every new job
on that host record the files once the database answers (:func:`drain`), through the same fenced action
a live worker would have used, so an outcome is stored exactly once, whether that takes ten seconds or
ten minutes, and across a worker restart.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from core.actions.jobs import Claim

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(?P<kind>[a-z_]+)-(?P<job>\d+)-(?P<gen>\d+)\.json$")


@dataclass(frozen=True)
class SpooledOutcome:
    """One outcome waiting for the database."""

    path: Path
    kind: str
    claim: Claim
    outcome: dict[str, Any]


def spool_dir() -> Path:
    """Where this host keeps outcomes not stored yet (``DATA_DIR/spool``)."""
    return Path(settings.DATA_DIR) / "spool"


def put(kind: str, claim: Claim, outcome: dict[str, Any]) -> Path:
    """Keep ``outcome`` of ``claim`` on disk, durably; returns its file."""
    folder = spool_dir()
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"{kind}-{claim.job_id}-{claim.generation}.json"
    tmp = final.with_suffix(f".tmp{os.getpid()}")
    record = {"claim": [claim.job_id, claim.generation, claim.attempt, claim.worker], "outcome": outcome}
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(record, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except OSError:  # a full disk: leave no partial file behind (the caller hears of the failure)
        tmp.unlink(missing_ok=True)
        raise
    log.warning("the database is unreachable: kept the %s %s outcome in %s", kind, claim.job_id, final)
    return final


def disk_problem() -> str | None:
    """Why this host could not keep an outcome if the database went away now (``None``: it could): the
    spool's file system has less than ``SPOOL_MIN_FREE_MB`` free. Part of the worker's health, so a worker
    whose disk is full takes no job (a result it played could be lost)."""
    folder = spool_dir()
    probe = folder if folder.is_dir() else Path(settings.DATA_DIR)
    try:
        stats = os.statvfs(probe)
    except OSError as exc:
        return f"the spool folder {folder} cannot be checked: {exc}"
    free_mb = stats.f_bavail * stats.f_frsize / (1024 * 1024)
    if free_mb < settings.SPOOL_MIN_FREE_MB:
        return (
            f"the disk of {probe} has {free_mb:.0f} MiB free, under SPOOL_MIN_FREE_MB "
            f"({settings.SPOOL_MIN_FREE_MB}): a result could not be kept through a database outage"
        )
    return None


def _clear_litter(folder: Path) -> None:
    """Remove temporary files of writers that are gone (a process killed mid-write)."""
    for tmp in folder.glob("*.tmp*"):
        pid = tmp.suffix.removeprefix(".tmp")
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            tmp.unlink(missing_ok=True)


def pending() -> Iterator[SpooledOutcome]:
    """The spooled outcomes, oldest first (unreadable files are moved aside, never lost; temporary files
    of dead writers are removed)."""
    folder = spool_dir()
    if not folder.is_dir():
        return
    _clear_litter(folder)
    for path in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime):
        match = _NAME.match(path.name)
        if match is None:
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            job_id, generation, attempt, worker = record["claim"]
            claim = Claim(int(job_id), int(generation), int(attempt), str(worker))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.error("spooled outcome %s is unreadable (%s); moved aside", path, exc)
            path.rename(path.with_suffix(".unreadable"))
            continue
        yield SpooledOutcome(path, match["kind"], claim, record["outcome"])


def done(entry: SpooledOutcome) -> None:
    """The database took (or definitively refused) ``entry``: forget it."""
    entry.path.unlink(missing_ok=True)


#: ``record(claim, outcome)``: a kind's fenced action storing its outcome (``False``: refused).
Record = Callable[[Claim, dict[str, Any]], bool]


def drain(records: Mapping[str, Record | None]) -> int:
    """Record the spooled outcomes (oldest first) while the database answers, each through the action of
    its kind in ``records``; returns how many were taken. Stops at the first database error (still down:
    try again next time); a kind without an action here is left for another worker on this host."""
    taken = 0
    for entry in pending():
        record = records.get(entry.kind)
        if record is None:
            continue
        try:
            stored = record(entry.claim, entry.outcome)
        except (OperationalError, InterfaceError):
            connection.close()
            break
        except Exception:  # an outcome the action rejects can never be stored: keep it aside for people
            log.exception("spooled %s outcome %s cannot be stored; kept aside", entry.kind, entry.path)
            entry.path.rename(entry.path.with_suffix(".rejected"))
            continue
        done(entry)
        taken += int(stored)
        log.warning(
            "spooled %s %s outcome %s",
            entry.kind,
            entry.claim.job_id,
            "recorded" if stored else "refused (it is over, or another worker holds it)",
        )
    return taken
