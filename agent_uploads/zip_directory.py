"""Stream a zip's central directory with early caps, before anything builds a list of its entries.

``zipfile.ZipFile`` reads the whole central directory into memory and makes one ``ZipInfo`` per entry: a
50 MB upload with a million empty entries costs it seconds and over half a gigabyte. ``scan_directory``
reads only the end record (the last 64 KiB), refuses at once an archive that *declares* too many entries
or too large a directory, then walks the directory records one at a time in 64 KiB reads and stops at the
first cap crossed: entry count, path length and depth, declared size per file and in total, compression
ratio. Memory stays a few chunks whatever the archive; an archive that passes is small enough for
``zipfile`` to open.

Every refusal is a ``ValidationError`` with a one-line message for the uploader.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

_EOCD = b"PK\x05\x06"
_EOCD_LEN = 22
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_LOCATOR_LEN = 20
_ZIP64_EOCD = b"PK\x06\x06"
_ZIP64_EOCD_LEN = 56
_CENTRAL = b"PK\x01\x02"
_CENTRAL_LEN = 46
_MAX_COMMENT = 0xFFFF
_READ = 1 << 16
_UTF8_FLAG = 0x800


class DirectoryError(ValueError):
    """The central directory breaks a cap or is malformed; ``str(error)`` is one line for the uploader."""


@dataclass(frozen=True)
class DirectoryLimits:
    """The caps checked while streaming (``ZipLimits`` carries the same values)."""

    max_entries: int
    max_total_bytes: int
    max_file_bytes: int
    max_path_bytes: int
    max_path_depth: int
    max_directory_bytes: int
    max_compression_ratio: int
    ratio_floor_bytes: int


@dataclass(frozen=True)
class DirectoryEntry:
    """What the directory says about one entry (nothing is decompressed)."""

    name: str
    compressed_size: int
    file_size: int


@dataclass(frozen=True)
class DirectorySummary:
    """An archive whose directory passed the caps."""

    entries: int
    directory_bytes: int
    declared_total: int


def _shown(name: str) -> str:
    return repr(name[:80] + ("..." if len(name) > 80 else ""))


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def _end_records(fh: BinaryIO, size: int) -> tuple[int, int, int]:
    """(declared entry count, directory size, directory start) from the end-of-central-directory record
    (and its zip64 form); the start accounts for data prepended to the archive, as ``zipfile`` does."""
    tail_len = min(size, _EOCD_LEN + _MAX_COMMENT)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    pos = tail.rfind(_EOCD)
    while pos >= 0 and pos + _EOCD_LEN > len(tail):
        pos = tail.rfind(_EOCD, 0, pos)
    if pos < 0:
        raise DirectoryError("the upload is not a valid zip archive (no end-of-archive record)")
    eocd_at = size - tail_len + pos
    _, disk, cd_disk, _, count, cd_size, _, _ = struct.unpack_from("<4sHHHHIIH", tail, pos)
    if disk or cd_disk:
        raise DirectoryError("the zip spans several files; upload a single-file zip")
    end_at = eocd_at
    if pos >= _ZIP64_LOCATOR_LEN and tail[pos - _ZIP64_LOCATOR_LEN : pos - _ZIP64_LOCATOR_LEN + 4] == (
        _ZIP64_LOCATOR
    ):
        # zip64: the real counts are in the zip64 end record, which sits right before its locator.
        record_at = eocd_at - _ZIP64_LOCATOR_LEN - _ZIP64_EOCD_LEN
        if record_at < 0:
            raise DirectoryError("the upload is not a valid zip archive (broken zip64 end record)")
        fh.seek(record_at)
        record = fh.read(_ZIP64_EOCD_LEN)
        if len(record) != _ZIP64_EOCD_LEN or record[:4] != _ZIP64_EOCD:
            raise DirectoryError("the upload is not a valid zip archive (broken zip64 end record)")
        _, _, _, _, disk64, cd_disk64, _, count, cd_size, _ = struct.unpack("<4sQHHIIQQQQ", record)
        if disk64 or cd_disk64:
            raise DirectoryError("the zip spans several files; upload a single-file zip")
        end_at = record_at
    start = end_at - cd_size
    if start < 0:
        raise DirectoryError("the upload is not a valid zip archive (its directory lies outside the file)")
    return count, cd_size, start


def _records(fh: BinaryIO, start: int, length: int) -> Iterator[tuple[bytes, int, int, int, bytes]]:
    """Yield (name bytes, flags, compressed size, file size, extra field) per directory record, reading
    ``length`` bytes from ``start`` in bounded chunks."""
    fh.seek(start)
    remaining = length
    buf = b""
    pos = 0

    def need(n: int) -> None:
        nonlocal buf, pos, remaining
        if len(buf) - pos >= n:
            return
        parts = [buf[pos:]]
        have = len(parts[0])
        while have < n:
            chunk = fh.read(min(_READ, remaining)) if remaining > 0 else b""
            if not chunk:
                raise DirectoryError("the zip's directory is truncated; re-create the zip")
            remaining -= len(chunk)
            have += len(chunk)
            parts.append(chunk)
        buf, pos = b"".join(parts), 0

    while remaining > 0 or pos < len(buf):
        need(_CENTRAL_LEN)
        if buf[pos : pos + 4] != _CENTRAL:
            raise DirectoryError("the zip's directory is corrupt; re-create the zip")
        flags, csize, usize, name_len, extra_len, comment_len = struct.unpack_from("<8xH10xIIHHH", buf, pos)
        need(_CENTRAL_LEN + name_len + extra_len + comment_len)
        name_at = pos + _CENTRAL_LEN
        name = buf[name_at : name_at + name_len]
        extra = buf[name_at + name_len : name_at + name_len + extra_len]
        pos = name_at + name_len + extra_len + comment_len
        yield name, flags, csize, usize, extra


def _zip64_sizes(extra: bytes, csize: int, usize: int) -> tuple[int, int]:
    """The real sizes when the 32-bit fields hold 0xFFFFFFFF (the zip64 extra field, id 1)."""
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, pos)
        if tag == 1:
            values = extra[pos + 4 : pos + 4 + size]
            offset = 0
            if usize == 0xFFFFFFFF and offset + 8 <= len(values):
                (usize,) = struct.unpack_from("<Q", values, offset)
                offset += 8
            if csize == 0xFFFFFFFF and offset + 8 <= len(values):
                (csize,) = struct.unpack_from("<Q", values, offset)
            break
        pos += 4 + size
    return csize, usize


def _check_entry(entry: DirectoryEntry, limits: DirectoryLimits) -> None:
    name = entry.name
    if not name:
        raise DirectoryError("the zip holds an entry without a name; re-create the zip")
    encoded_len = len(name.encode("utf-8", "surrogateescape"))
    depth = sum(1 for part in name.split("/") if part not in ("", "."))
    if depth > limits.max_path_depth:
        raise DirectoryError(
            f"the file name {_shown(name)} is {depth} folders deep; the limit is {limits.max_path_depth}"
        )
    if encoded_len > limits.max_path_bytes:
        raise DirectoryError(
            f"the file name {_shown(name)} is {encoded_len} bytes long; the limit is {limits.max_path_bytes}"
        )
    if entry.file_size > limits.max_file_bytes:
        raise DirectoryError(
            f"{_shown(name)} is {_mib(entry.file_size)} uncompressed; the limit per file is "
            f"{_mib(limits.max_file_bytes)}"
        )
    if (
        entry.file_size > limits.ratio_floor_bytes
        and entry.file_size > max(entry.compressed_size, 1) * limits.max_compression_ratio
    ):
        raise DirectoryError(
            f"{_shown(name)} compresses more than {limits.max_compression_ratio} to 1 "
            f"({_mib(entry.file_size)} from {entry.compressed_size} bytes), which is refused as a possible "
            "zip bomb"
        )


def directory_entries(fh: BinaryIO, size: int) -> tuple[int, int, Iterator[DirectoryEntry]]:
    """(declared entry count, directory size in bytes, the entries one at a time) of the zip in ``fh``,
    streamed in bounded chunks without decompressing anything; the caller applies its own caps
    (``builder.wheels`` for a wheel). A malformed archive raises ``DirectoryError``, also while iterating."""
    declared, cd_size, start = _end_records(fh, size)

    def entries() -> Iterator[DirectoryEntry]:
        for raw_name, flags, csize, usize, extra in _records(fh, start, cd_size):
            name = raw_name.decode("utf-8" if flags & _UTF8_FLAG else "cp437", "surrogateescape")
            csize, usize = _zip64_sizes(extra, csize, usize)
            yield DirectoryEntry(name=name, compressed_size=csize, file_size=usize)

    return declared, cd_size, entries()


def scan_directory(fh: BinaryIO, size: int, limits: DirectoryLimits) -> DirectorySummary:
    """Check the central directory of the zip in ``fh`` (``size`` bytes long, seekable) against ``limits``
    without holding more than a few 64 KiB chunks; raise ``DirectoryError`` at the first cap crossed."""
    declared, cd_size, start = _end_records(fh, size)
    if declared > limits.max_entries:
        raise DirectoryError(
            f"the zip has {declared} entries; the limit is {limits.max_entries} files and folders"
        )
    if cd_size > limits.max_directory_bytes:
        raise DirectoryError(
            f"the zip's directory is {_mib(cd_size)}; the limit is {_mib(limits.max_directory_bytes)}"
        )
    count = 0
    total = 0
    for raw_name, flags, csize, usize, extra in _records(fh, start, cd_size):
        count += 1
        if count > limits.max_entries:
            raise DirectoryError(
                f"the zip has more than {limits.max_entries} entries; the limit is {limits.max_entries} "
                "files and folders"
            )
        name = raw_name.decode("utf-8" if flags & _UTF8_FLAG else "cp437", "surrogateescape")
        csize, usize = _zip64_sizes(extra, csize, usize)
        entry = DirectoryEntry(name=name, compressed_size=csize, file_size=usize)
        _check_entry(entry, limits)
        total += usize
        if total > limits.max_total_bytes:
            raise DirectoryError(
                f"the zip would decompress to more than {_mib(limits.max_total_bytes)}; remove large files"
            )
    if count != declared:
        raise DirectoryError(
            f"the zip's directory holds {count} entries but its end record declares {declared}; "
            "re-create the zip"
        )
    return DirectorySummary(entries=count, directory_bytes=cd_size, declared_total=total)
