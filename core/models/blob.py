"""Content-addressed bytes every machine of a deployment reads with the credentials it already has.

Uploads live here (``core.blobs``), so a worker on another machine builds a revision without any shared
filesystem: a blob is addressed by the sha256 of its bytes, stored in chunks of ``core.blobs.CHUNK_BYTES``
and verified against its address whenever it is read.
"""

from __future__ import annotations

from django.db import models


class Blob(models.Model):
    """One content (an uploaded zip). Its bytes are its ``chunks`` in ``index`` order."""

    sha256 = models.CharField(max_length=64, primary_key=True, help_text="sha256 of the bytes (hex).")
    size = models.PositiveBigIntegerField(help_text="Length of the bytes.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"blob {self.sha256[:16]} ({self.size} bytes)"


class BlobChunk(models.Model):
    """Bytes ``index * CHUNK_BYTES`` onwards of a blob."""

    blob = models.ForeignKey(Blob, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["blob", "index"], name="blob_chunk_unique_index")]

    def __str__(self) -> str:
        return f"chunk {self.index} of blob {self.blob_id[:16]}"
