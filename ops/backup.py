"""Backups that restore: the database and everything of ``DATA_DIR`` that is not in it, in one archive.

An archive ``arena-backup-<UTC stamp>.tar`` holds:

- ``database.dump`` (PostgreSQL, ``pg_dump --format=custom``) or ``database.sqlite3`` (SQLite, through the
  live connection's backup API, so a running embedded arena is copied consistently);
- ``data.tar.gz``: ``DATA_DIR`` without what is rebuilt or transient (``broker/``, ``cache/``, ``run/``,
  ``static/``, the SQLite file itself, which is in the part above): uploads, build folders, the
  publisher's repository, the spool of unrecorded results, the secret key;
- ``manifest.json``: when, which database engine, the applied migrations, and each part's sha256.

``restore`` checks the manifest's digests and that this code knows every migration the backup had, then
replaces the database (``pg_restore --clean --if-exists``) and the saved parts of ``DATA_DIR``.
``prune`` keeps the newest ``keep`` archives of a folder. ``scripts/backup.sh`` and ``scripts/restore.sh``
run these through ``manage.py backup`` / ``manage.py restore``; ``docs/DEPLOYMENT.md`` gives the schedule.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, connections

#: Folders of DATA_DIR that are rebuilt or transient, never backed up (nor touched by a restore).
SKIPPED = ("broker", "cache", "run", "static")
PREFIX = "arena-backup-"


class BackupError(Exception):
    """A backup or restore could not be done; ``str()`` says why."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pg_env() -> tuple[list[str], dict[str, str]]:
    db: dict[str, Any] = settings.DATABASES["default"]
    args = ["--dbname", db["NAME"]]
    if db.get("HOST"):
        args += ["--host", db["HOST"]]
    if db.get("PORT"):
        args += ["--port", str(db["PORT"])]
    if db.get("USER"):
        args += ["--username", db["USER"]]
    env = {**os.environ, "PGPASSWORD": db.get("PASSWORD") or ""}
    return args, env


def _run(cmd: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BackupError(f"{cmd[0]} failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")


def _applied_migrations() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT app, name FROM django_migrations ORDER BY app, name")
        return [f"{app}.{name}" for app, name in cursor.fetchall()]


def _sqlite() -> sqlite3.Connection:
    connection.ensure_connection()
    return connection.connection  # the live connection: its backup API copies a consistent snapshot


def _dump_database(out: Path) -> str:
    vendor = connection.vendor
    if vendor == "postgresql":
        args, env = _pg_env()
        _run(["pg_dump", "--format=custom", "--no-owner", "--no-privileges", "--file", str(out), *args], env)
    elif vendor == "sqlite":
        target = sqlite3.connect(out)
        try:
            _sqlite().backup(target)
        finally:
            target.close()
    else:
        raise BackupError(f"backups support PostgreSQL and SQLite, not {vendor}")
    return vendor


def _data_filter(data_dir: Path, out_dir: Path) -> Callable[[tarfile.TarInfo], tarfile.TarInfo | None]:
    """Leaves out SKIPPED folders, the SQLite files (dumped apart) and the backups folder when it lies in
    DATA_DIR (a backup never holds the earlier ones)."""
    sqlite_file = Path(str(settings.DATABASES["default"]["NAME"])) if connection.vendor == "sqlite" else None

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        top = Path(info.name).parts[1:2]
        if top and top[0] in SKIPPED:
            return None
        if (data_dir / Path(*Path(info.name).parts[1:])).resolve() == out_dir:
            return None
        if sqlite_file is not None and (data_dir / Path(*Path(info.name).parts[1:])) in (
            sqlite_file,
            sqlite_file.with_name(sqlite_file.name + "-wal"),
            sqlite_file.with_name(sqlite_file.name + "-shm"),
            sqlite_file.with_name(sqlite_file.name + "-journal"),
        ):
            return None
        return info

    return keep


def backup(out_dir: Path) -> Path:
    """Write one archive into ``out_dir`` and return its path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    data_dir = Path(settings.DATA_DIR)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".backup-") as tmp:
        work = Path(tmp)
        vendor = _dump_database(
            work / ("database.dump" if connection.vendor == "postgresql" else "database.sqlite3")
        )
        db_part = "database.dump" if vendor == "postgresql" else "database.sqlite3"
        with tarfile.open(work / "data.tar.gz", "w:gz") as tar:
            if data_dir.is_dir():
                tar.add(data_dir, arcname="data", filter=_data_filter(data_dir, out_dir.resolve()))
        manifest = {
            "format": 1,
            "created_at": stamp,
            "database": vendor,
            "migrations": _applied_migrations(),
            "parts": {name: _sha256(work / name) for name in (db_part, "data.tar.gz")},
        }
        (work / "manifest.json").write_text(json.dumps(manifest, indent=2))
        partial = work / "archive.tar"
        with tarfile.open(partial, "w") as tar:
            for name in ("manifest.json", db_part, "data.tar.gz"):
                tar.add(work / name, arcname=name)
        final = out_dir / f"{PREFIX}{stamp}.tar"
        os.replace(partial, final)  # whole or nothing: a half-written archive never carries the name
    return final


def prune(out_dir: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` archives in ``out_dir``; returns what was deleted."""
    archives = sorted(out_dir.glob(f"{PREFIX}*.tar"))
    doomed = archives[: max(0, len(archives) - keep)]
    for path in doomed:
        path.unlink()
    return doomed


@contextmanager
def _opened(archive: Path) -> Iterator[tuple[dict, Path]]:
    with tempfile.TemporaryDirectory(prefix="arena-restore-") as tmp:
        work = Path(tmp)
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(work, filter="data")
            manifest = json.loads((work / "manifest.json").read_text())
        except (OSError, tarfile.TarError, ValueError) as exc:
            raise BackupError(f"{archive} is not a readable backup: {exc}") from exc
        for name, digest in manifest.get("parts", {}).items():
            if not (work / name).is_file() or _sha256(work / name) != digest:
                raise BackupError(f"{archive}: {name} is missing or does not match its digest")
        yield manifest, work


def _known_migrations() -> set[str]:
    from django.db.migrations.loader import MigrationLoader

    return {f"{app}.{name}" for app, name in MigrationLoader(None, ignore_no_migrations=True).disk_migrations}


def restore(archive: Path) -> dict:
    """Replace the database and ``DATA_DIR``'s saved parts with ``archive``'s; returns its manifest."""
    with _opened(archive) as (manifest, work):
        unknown = sorted(set(manifest["migrations"]) - _known_migrations())
        if unknown:
            raise BackupError(f"the backup has migrations this code does not know: {', '.join(unknown[:5])}")
        if manifest["database"] != connection.vendor:
            raise BackupError(
                f"the backup holds a {manifest['database']} database; this arena runs {connection.vendor}"
            )
        if connection.vendor == "postgresql":
            connections.close_all()
            args, env = _pg_env()
            _run(
                [
                    "pg_restore",
                    "--clean",
                    "--if-exists",
                    "--no-owner",
                    "--no-privileges",
                    "--single-transaction",
                    *args,
                    str(work / "database.dump"),
                ],
                env,
            )
        else:
            source = sqlite3.connect(work / "database.sqlite3")
            try:
                source.backup(_sqlite())
            finally:
                source.close()
        data_dir = Path(settings.DATA_DIR)
        data_dir.mkdir(parents=True, exist_ok=True)
        for child in data_dir.iterdir():
            if child.name in SKIPPED or _is_sqlite_file(child):
                continue
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        with tarfile.open(work / "data.tar.gz") as tar:
            for member in tar.getmembers():
                parts = Path(member.name).parts
                if len(parts) < 2:
                    continue
                member.name = str(Path(*parts[1:]))
                tar.extract(member, data_dir, filter="data")
    return manifest


def _is_sqlite_file(path: Path) -> bool:
    if connection.vendor != "sqlite":
        return False
    name = Path(str(settings.DATABASES["default"]["NAME"])).name
    return path.name in (name, name + "-wal", name + "-shm", name + "-journal")


def describe(archive: Path) -> str:
    """One line about an archive (for the commands' output)."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("manifest.json")
        if member is None:
            raise BackupError(f"{archive}: manifest.json is not a file")
        manifest = json.load(io.TextIOWrapper(member))
    size = archive.stat().st_size
    migrations = len(manifest["migrations"])
    return f"{archive} ({size / 1048576:.1f} MiB, {manifest['database']}, {migrations} migrations)"
