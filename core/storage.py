"""Where files live under ``DATA_DIR``. Paths are computed from settings at call time."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def data_dir() -> Path:
    """The data folder (``settings.DATA_DIR``)."""
    return Path(settings.DATA_DIR)


def submissions_dir() -> Path:
    """Folder of uploaded zips."""
    return data_dir() / "submissions"


def builds_dir() -> Path:
    """Scratch/output folder of builds (local backend agent folders live here)."""
    return data_dir() / "builds"


def tmp_dir() -> Path:
    """Scratch folder on the same filesystem as the submissions (so a rename is atomic)."""
    path = data_dir() / "tmp"
    path.mkdir(parents=True, exist_ok=True)
    return path


def absolute(relative: str) -> Path:
    """Absolute path of a path stored relative to ``DATA_DIR``."""
    return data_dir() / relative


def relative(path: Path) -> str:
    """``path`` relative to ``DATA_DIR`` (stored in the database so DATA_DIR can move)."""
    return str(path.resolve().relative_to(data_dir().resolve()))
