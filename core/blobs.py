"""The upload store: content-addressed blobs in the database (``core.models.Blob``), read by every worker
with the database credentials it already has, so no machine needs another machine's ``DATA_DIR``.

A blob is addressed by the sha256 of its bytes, stored in chunks of ``CHUNK_BYTES`` (streamed in and out
in bounded memory) and verified against its address on every read. The web host keeps each upload's zip
under ``DATA_DIR/submissions`` too, as a cache: :func:`local_copy` uses that file when its bytes match,
else fetches the blob. A blob that is missing or whose bytes do not match its address is
:class:`BlobUnavailable`: a fault of the platform (retried), never of the user who uploaded it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction

from core import storage

if TYPE_CHECKING:
    from core.models import Revision

CHUNK_BYTES = 1 << 20


class BlobUnavailable(Exception):
    """The store cannot give the bytes of a blob back as addressed (missing, truncated or altered)."""


def put_file(path: Path, sha256: str) -> bool:
    """Store the bytes of ``path`` as blob ``sha256`` unless it is stored already (content-addressed:
    the same upload twice is stored once). Streams the file in chunks; raises ``ValueError`` if its bytes
    do not hash to ``sha256``. Returns whether it stored the blob. Atomic (its own savepoint); call it in
    the transaction that creates the revision using the blob."""
    from core.models import Blob, BlobChunk

    with transaction.atomic():
        # Locked until the caller's transaction ends: retention (ops.retention) deletes a blob only under
        # this lock, after checking that no other revision uses it, so it never removes one just reused.
        if Blob.objects.select_for_update().filter(pk=sha256).values_list("pk", flat=True).first():
            return False
    digest = hashlib.sha256()
    try:
        with transaction.atomic():
            blob = Blob.objects.create(sha256=sha256, size=0)
            size = 0
            with open(path, "rb") as fh:
                for index, chunk in enumerate(iter(lambda: fh.read(CHUNK_BYTES), b"")):
                    digest.update(chunk)
                    size += len(chunk)
                    BlobChunk.objects.create(blob=blob, index=index, data=chunk)
            if digest.hexdigest() != sha256:
                raise ValueError(f"{path} does not hash to {sha256}")
            Blob.objects.filter(pk=sha256).update(size=size)
    except IntegrityError:
        # Another upload of the same bytes stored it first (the insert waited for its commit).
        if not Blob.objects.filter(pk=sha256).exists():
            raise
        return False
    return True


def exists(sha256: str) -> bool:
    from core.models import Blob

    return Blob.objects.filter(pk=sha256).exists()


def write_to(sha256: str, dest: Path) -> None:
    """Write blob ``sha256`` to ``dest`` (through a temporary file beside it, renamed once verified).
    Raises :class:`BlobUnavailable` when it is not stored, or its chunks do not give back ``size`` bytes
    hashing to ``sha256``."""
    from core.models import Blob, BlobChunk

    blob = Blob.objects.filter(pk=sha256).first()
    if blob is None:
        raise BlobUnavailable(f"blob {sha256[:16]} is not in the store")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.{uuid.uuid4().hex}.part"
    digest = hashlib.sha256()
    size = 0
    expected_index = 0
    try:
        with open(tmp, "wb") as out:
            chunks = BlobChunk.objects.filter(blob_id=sha256).order_by("index").values_list("index", "data")
            for index, data in chunks.iterator(chunk_size=4):
                if index != expected_index:
                    raise BlobUnavailable(f"blob {sha256[:16]}: chunk {expected_index} is missing")
                expected_index += 1
                data = bytes(data)
                digest.update(data)
                size += len(data)
                out.write(data)
        if size != blob.size or digest.hexdigest() != sha256:
            raise BlobUnavailable(
                f"blob {sha256[:16]} is corrupt: {size} bytes hashing to {digest.hexdigest()[:16]}, "
                f"stored as {blob.size} bytes"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _matches(path: Path, sha256: str) -> bool:
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK_BYTES), b""):
                digest.update(chunk)
    except OSError:
        return False
    return digest.hexdigest() == sha256


@contextlib.contextmanager
def local_copy(revision: Revision) -> Iterator[Path]:
    """A file on this machine holding ``revision``'s upload, verified against ``content_hash``: its zip
    under ``DATA_DIR`` when present and intact (the web host's cache), else the blob fetched into
    ``DATA_DIR/tmp`` (removed on exit). Raises :class:`BlobUnavailable` when neither gives the bytes."""
    sha256 = revision.content_hash
    if revision.zip_path:
        data_dir = storage.data_dir().resolve()
        cached = (data_dir / revision.zip_path).resolve()
        if cached.is_relative_to(data_dir) and cached.is_file() and _matches(cached, sha256):
            yield cached
            return
    fetched = storage.tmp_dir() / f"blob-{uuid.uuid4().hex}.zip"
    try:
        write_to(sha256, fetched)
        yield fetched
    finally:
        fetched.unlink(missing_ok=True)
