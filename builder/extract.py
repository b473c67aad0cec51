"""Safe extraction of a validated submission zip.

Only the entries ``validate_zip`` accepted are written, under their normalised names, as plain files
(mode 0644, folders 0755) created with ``O_EXCL | O_NOFOLLOW`` inside a fresh folder; sizes are capped
again while writing (the zip could have changed since validation). Extraction goes to a temporary folder
that is renamed into place at the end, so a half-extracted submission is never visible.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path

from agent_uploads.zip_validation import ValidatedZip, ValidationError, read_member_capped
from run_duel.api import has_agent_entry

_FILE_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


def _write_entries(validated: ValidatedZip, root: Path) -> None:
    budget = validated.limits.max_total_bytes
    with validated.open_zip() as zf:
        for entry in validated.entries:
            target = root.joinpath(*entry.path.split("/"))
            # Defence in depth: validation already refused '..' and absolute names.
            if os.path.commonpath(
                [os.path.realpath(target.parent), os.path.realpath(root)]
            ) != os.path.realpath(root):
                raise ValidationError(f"{entry.member!r} would be written outside the submission folder")
            target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
            fd = os.open(target, _FILE_FLAGS, 0o644)
            with os.fdopen(fd, "wb") as out:
                budget -= read_member_capped(zf, entry, budget, out.write)


def extract_zip(validated: ValidatedZip, dest: Path) -> Path:
    """Extract ``validated`` into ``dest`` (which must not exist yet); return ``dest``.

    Raises ``ValidationError`` if the archive misbehaves during extraction and ``FileExistsError`` if
    ``dest`` already exists.
    """
    dest = Path(dest)
    if dest.exists():
        raise FileExistsError(f"{dest} already exists")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        tmp.chmod(0o755)
        _write_entries(validated, tmp)
        try:
            os.rename(tmp, dest)
        except OSError as exc:  # another process renamed its extraction into place first
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise FileExistsError(f"{dest} already exists") from exc
            raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def extract_cached(validated: ValidatedZip, cache_root: Path) -> tuple[Path, bool]:
    """Extract into ``cache_root/<content_hash>`` unless it is already there; return (path, reused)."""
    dest = Path(cache_root) / validated.content_hash
    if has_agent_entry(dest):
        return dest, True
    try:
        return extract_zip(validated, dest), False
    except FileExistsError:
        # Another builder extracted the same content at the same time, or a broken leftover is there.
        if has_agent_entry(dest):
            return dest, True
        with contextlib.suppress(OSError):
            shutil.rmtree(dest)
        return extract_zip(validated, dest), False
