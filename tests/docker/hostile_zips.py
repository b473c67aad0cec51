"""Hostile upload archives, written byte by byte (``zipfile`` itself would take minutes and gigabytes).

* ``many_entries_zip``: a million directory records (an upload of about 49 MiB, under the 50 MiB cap)
  that all point at one empty local file, with honest zip64 end records, or an end record that lies
  about the count;
* ``deep_path_zip``: ``player.py`` plus a file 1,500 folders deep.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

PLAYER = b"class Player:\n    def __init__(self, train_mode=False):\n        pass\n"


def _central(name: bytes, offset: int) -> bytes:
    # version made by 20 (MS-DOS), needed 20, no flags, stored, zero time/date/crc/sizes, no extra/comment.
    return (
        struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            len(name),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        + name
    )


def many_entries_zip(path: Path, entries: int = 1_000_000, *, honest_count: bool = True) -> Path:
    """A zip with ``entries`` directory records (names of 5 hex digits) sharing one empty local file."""
    local_name = b"00000"
    local = (
        struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(local_name), 0) + local_name
    )
    with open(path, "wb") as out:
        out.write(local)
        cd_start = out.tell()
        batch = []
        for i in range(entries):
            batch.append(_central(b"%05x" % i, 0))
            if len(batch) == 10_000:
                out.write(b"".join(batch))
                batch.clear()
        out.write(b"".join(batch))
        cd_end = out.tell()
        cd_size = cd_end - cd_start
        if honest_count:
            zip64_at = out.tell()
            out.write(
                struct.pack(
                    "<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, cd_size, cd_start
                )
            )
            out.write(struct.pack("<4sIQI", b"PK\x06\x07", 0, zip64_at, 1))
            count16 = 0xFFFF
        else:
            count16 = 10
        out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, count16, count16, cd_size, cd_start, 0))
    return path


def deep_path_zip(path: Path, depth: int = 1500) -> Path:
    """``player.py`` and ``d/d/.../deep.txt`` with ``depth`` folders."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("player.py", PLAYER)
        archive.writestr("d/" * depth + "deep.txt", b"deep")
    return path


def stored_zip(path: Path, entries: list[tuple[bytes, bytes]], *, version_needed: int = 20) -> Path:
    """A zip of stored (uncompressed) entries written field by field, names as given (even empty), with
    ``version_needed`` in every directory record."""
    import zlib

    local_parts, central_parts, offset = [], [], 0
    for name, data in entries:
        crc = zlib.crc32(data)
        local = struct.pack(
            "<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0
        )
        local_parts.append(local + name + data)
        central_parts.append(
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                20,
                version_needed,
                0,
                0,
                0,
                0,
                crc,
                len(data),
                len(data),
                len(name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + name
        )
        offset += len(local_parts[-1])
    central = b"".join(central_parts)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(central), offset, 0)
    path.write_bytes(b"".join(local_parts) + central + end)
    return path
