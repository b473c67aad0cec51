"""Zip archives built in memory for the tests (uploads, published revisions)."""

from __future__ import annotations

import io
import zipfile


def zip_bytes(files: dict[str, str]) -> bytes:
    """A zip holding ``files`` (name -> text)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return buf.getvalue()
