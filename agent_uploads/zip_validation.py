"""Validate a submission zip before anything from it touches the disk.

Every check produces a ``ValidationError`` whose message tells the uploader what to fix. The checks:
size of the upload; then, streaming the central directory before any list of entries is built
(``agent_uploads.zip_directory``): number of entries, directory size, path length and depth, declared sizes
and compression ratio; then total *actual* decompressed bytes (zip bombs),
absolute paths, ``..``, backslashes and control characters in names, symlinks, device files, encrypted
entries, unsupported compression, duplicate names, a file that is also used as a folder, and the presence
of an entry file (``agent_uploads.languages``: ``player.py``, a Kaggle-style ``main.py``, ``main.cpp`` or
``main.js``) — at the top level, or inside one single top-level folder (then that folder is stripped:
``my_bot/player.py`` becomes ``player.py``).
``__MACOSX/`` and ``.DS_Store`` entries are ignored.

The result, ``ValidatedZip``, lists the entries to extract with their normalised names and a content hash
that does not depend on the zip's metadata (timestamps, order, compression, top folder name). The archive
is read once: its directory streamed, then opened once, every file decompressed once; the bytes of the few
small files later steps read (``keep``: package files, the Python sources the syntax check compiles) are
kept from that pass, so nothing opens the zip again to learn them (``agent_uploads.upload.read_upload``).
"""

from __future__ import annotations

import hashlib
import lzma
import re
import stat
import zipfile
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, cast

from agent_uploads.languages import ENTRY_FILES as LANGUAGE_ENTRY_FILES
from agent_uploads.languages import Language, detect_language
from agent_uploads.zip_directory import DirectoryError, DirectoryLimits, scan_directory

SUPPORTED_COMPRESSION = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
_CHUNK = 1 << 16
_IGNORED_PREFIXES = ("__MACOSX/",)
_IGNORED_BASENAMES = {".DS_Store", "Thumbs.db"}
#: The entry files that declare an agent's language (``agent_uploads.languages``): ``player.py`` (class
#: Player), ``main.py`` (Kaggle ``agent``), ``main.cpp`` (C++), ``main.js`` (JavaScript).
ENTRY_FILES = LANGUAGE_ENTRY_FILES
#: Code points HFS+ ignores in file names (git's ``is_hfs_dotgit``): ``.g\u200cit`` is ``.git`` there.
_HFS_IGNORABLE = frozenset([*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])
#: What git's ``verify_path`` refuses as a path component (core.protectNTFS, on by default everywhere):
#: ``.git`` in any case, followed by any run of dots and spaces (Windows drops them), by an NTFS alternate
#: data stream (``.git::$INDEX_ALLOCATION``), or its NTFS 8.3 short name ``git~1``.
_GIT_COMPONENT = re.compile(r"(?:\.git|git~1)[. ]*(?::.*)?", re.IGNORECASE | re.DOTALL)


class ValidationError(ValueError):
    """The upload is not an acceptable submission; ``str(error)`` is meant for the uploader."""


class DirectoryRefused(ValidationError):
    """Refused from its central directory alone (``check_directory``: empty, too large, a cap crossed),
    before anything opened it with ``zipfile``."""


class UnreadableUpload(ValidationError):
    """The file holding the upload could not be read (an I/O error, not its content): at upload the
    uploader is told, in a build it is the platform's fault (``build_submission``: ``INFRA``, retried)."""


@dataclass(frozen=True)
class ZipLimits:
    """Caps on what an upload may contain."""

    max_zip_bytes: int = 100 * 1024 * 1024
    max_entries: int = 2000
    max_total_bytes: int = 500 * 1024 * 1024  # decompressed, all files together
    max_file_bytes: int = 300 * 1024 * 1024  # decompressed, one file
    max_name_length: int = 255  # one path component, in bytes
    max_path_bytes: int = 1024  # a whole member name, in bytes
    max_path_depth: int = 32  # folders and file name
    max_directory_bytes: int = 8 * 1024 * 1024  # the zip's central directory
    #: A file over ``ratio_floor_bytes`` may not inflate more than this (deflate tops out near 1032:1).
    max_compression_ratio: int = 200
    ratio_floor_bytes: int = 1024 * 1024

    def directory_limits(self) -> DirectoryLimits:
        """The caps checked while streaming the central directory."""
        return DirectoryLimits(
            max_entries=self.max_entries,
            max_total_bytes=self.max_total_bytes,
            max_file_bytes=self.max_file_bytes,
            max_path_bytes=self.max_path_bytes,
            max_path_depth=self.max_path_depth,
            max_directory_bytes=self.max_directory_bytes,
            max_compression_ratio=self.max_compression_ratio,
            ratio_floor_bytes=self.ratio_floor_bytes,
        )


@dataclass(frozen=True)
class ZipEntry:
    """One regular file to extract: the member name in the zip and its normalised relative path."""

    member: str
    path: str
    size: int


@dataclass(frozen=True)
class ValidatedZip:
    """A zip that passed every check: what every later step needs, so none reads the archive again."""

    zip_path: Path | None  # None when it was read from a file object (an upload still in its request)
    entries: tuple[ZipEntry, ...]
    content_hash: str
    total_bytes: int
    has_requirements: bool
    stripped_prefix: str = ""
    limits: ZipLimits = field(default_factory=ZipLimits)
    #: The bytes of the files ``validate_zip(keep=...)`` asked for, from the pass that hashed them.
    kept: Mapping[str, bytes] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def paths(self) -> list[str]:
        """Every file's path relative to the agent's folder."""
        return [entry.path for entry in self.entries]

    @property
    def root_files(self) -> list[str]:
        """The files at the top of the agent's folder (what the agent format is detected from)."""
        return [entry.path for entry in self.entries if "/" not in entry.path]

    @property
    def language(self) -> Language | None:
        """The language its entry file declares (``agent_uploads.languages``)."""
        return detect_language(self.paths)

    def open_zip(self) -> zipfile.ZipFile:
        """The archive, opened again from its path (to stream its files into a build or a folder)."""
        if self.zip_path is None:
            raise ValueError("this zip was validated from a file object: open it from its stored copy")
        return zipfile.ZipFile(self.zip_path)


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def git_refuses(component: str) -> bool:
    """Whether git refuses ``component`` (one path component) as part of a file's path: ``.git`` in any
    case, with trailing dots or spaces, an NTFS stream suffix or HFS+ ignorable code points, or ``git~1``.
    Such a file could never be published (``publisher``), and on a case-insensitive checkout it would
    write into the repository's own ``.git`` folder."""
    folded = "".join(c for c in component if ord(c) not in _HFS_IGNORABLE)
    return _GIT_COMPONENT.fullmatch(folded) is not None


def _split_name(name: str, limits: ZipLimits) -> list[str]:
    """Return the path components of a member name, or raise for a dangerous name."""
    shown = name[:120]
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValidationError(f"the file name {shown!r} contains control characters")
    if "\\" in name:
        raise ValidationError(
            f"the file name {shown!r} contains a backslash; re-create the zip with a tool that writes "
            "'/' as the folder separator"
        )
    if name.startswith("/") or (len(name) >= 2 and name[1] == ":"):
        raise ValidationError(f"the file name {shown!r} is an absolute path; only relative paths are allowed")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValidationError(f"the file name {shown!r} contains '..'; files must stay inside the submission")
    if any(len(p.encode("utf-8", "surrogateescape")) > limits.max_name_length for p in parts):
        raise ValidationError(f"the file name {shown!r} is too long")
    if any(git_refuses(p) for p in parts):
        raise ValidationError(
            f"the file name {shown!r} is inside a git folder (.git, in any spelling git refuses); remove "
            "the .git folder from the zip"
        )
    return parts


def _check_type(info: zipfile.ZipInfo) -> None:
    """Reject symlinks, devices, FIFOs, sockets and encrypted or oddly compressed entries."""
    mode = (info.external_attr >> 16) & 0xFFFF
    if mode:
        kind = stat.S_IFMT(mode)
        if stat.S_ISLNK(mode):
            raise ValidationError(f"{info.filename!r} is a symbolic link; symbolic links are not allowed")
        if kind and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ValidationError(
                f"{info.filename!r} is a special file (device, FIFO or socket); "
                "only regular files are allowed"
            )
    if info.flag_bits & 0x1:
        raise ValidationError(f"{info.filename!r} is encrypted; upload a zip without a password")
    if info.compress_type not in SUPPORTED_COMPRESSION:
        raise ValidationError(
            f"{info.filename!r} uses an unsupported compression method ({info.compress_type}); "
            "use the standard 'deflate' compression"
        )


def _strip_top_folder(files: dict[str, list[str]], dirs: set[str]) -> str:
    """Decide where the entry file (``ENTRY_FILES``) is; return the prefix to strip."""
    if any(entry in files for entry in ENTRY_FILES):
        return ""
    tops = {parts[0] for parts in files.values()} | {d.split("/", 1)[0] for d in dirs}
    if len(tops) == 1:
        (top,) = tops
        if any(f"{top}/{entry}" in files for entry in ENTRY_FILES):
            return top + "/"
    raise ValidationError(
        "player.py is missing: the zip must contain player.py at its top level "
        "(or inside one single top-level folder); a Kaggle agent's main.py (or submission.py), whose "
        "last function is agent(observation, configuration), is accepted instead for Connect Four and "
        "Tic-tac-toe, "
        "main.cpp for a C++ agent and main.js for a JavaScript one"
    )


def read_member_capped(zf: zipfile.ZipFile, entry: ZipEntry, budget: int, sink=None) -> int:
    """Decompress one member, enforcing its declared size and ``budget`` bytes; return the bytes read.

    ``sink(chunk)`` receives the data. The declared size in the zip's directory can lie; the cap is
    enforced on the bytes actually produced.
    """
    produced = 0
    limit = min(entry.size, budget)
    try:
        with zf.open(entry.member) as src:
            while True:
                chunk = src.read(_CHUNK)
                if not chunk:
                    break
                produced += len(chunk)
                if produced > limit:
                    if produced > entry.size:
                        raise ValidationError(
                            f"{entry.member!r} decompresses to more than the size the zip declares; "
                            "the archive is corrupt or malicious"
                        )
                    raise ValidationError(
                        "the zip decompresses to more than the allowed total; remove large files"
                    )
                if sink is not None:
                    sink(chunk)
    except zipfile.BadZipFile as exc:
        raise ValidationError(f"{entry.member!r} is corrupt ({exc}); re-create the zip") from exc
    except (
        EOFError,
        OSError,
        RuntimeError,
        NotImplementedError,
        ValueError,
        zlib.error,
        lzma.LZMAError,
    ) as exc:
        # Corrupt data: zlib.error, lzma.LZMAError, OSError/EOFError (bz2); RuntimeError for undetected
        # passwords. Never an infrastructure error: the archive is the uploader's.
        raise ValidationError(f"{entry.member!r} cannot be decompressed ({exc}); re-create the zip") from exc
    return produced


def check_directory(fh: BinaryIO, limits: ZipLimits | None = None) -> None:
    """Stream the central directory of the zip in the seekable ``fh`` through the early caps (entry count,
    directory size, path length and depth, declared sizes, compression ratio) in bounded memory; raise
    ``ValidationError`` with a one-line message at the first cap crossed. Restores the file position."""
    limits = limits or ZipLimits()
    position = fh.tell()
    try:
        size = fh.seek(0, 2)
        if size == 0:
            raise DirectoryRefused("the upload is empty")
        if size > limits.max_zip_bytes:
            raise DirectoryRefused(f"the upload is {_mib(size)}; the limit is {_mib(limits.max_zip_bytes)}")
        scan_directory(fh, size, limits.directory_limits())
    except DirectoryError as exc:
        raise DirectoryRefused(str(exc)) from None
    except OSError as exc:
        raise UnreadableUpload(f"the upload cannot be read: {exc}") from exc
    finally:
        fh.seek(position)


#: ``keep(entries)``: the paths (relative to the agent's folder) whose bytes ``validate_zip`` keeps.
KeepFiles = Callable[[Sequence[ZipEntry]], Collection[str]]


def validate_zip(
    source: Path | str | BinaryIO, limits: ZipLimits | None = None, *, keep: KeepFiles | None = None
) -> ValidatedZip:
    """Check the zip at path ``source`` (or in the seekable binary file ``source``, whose position is left
    at its start) and return what to extract; raise ``ValidationError`` with a readable message
    (``DirectoryRefused`` when its central directory alone refuses it). ``keep`` names files whose bytes
    the result carries (``ValidatedZip.kept``), read in the same pass as every other file."""
    limits = limits or ZipLimits()
    if isinstance(source, str | Path):
        path = Path(source)
        zip_path: Path | None = path
        try:
            fh = cast(BinaryIO, open(path, "rb"))  # noqa: SIM115 - closed below
        except OSError as exc:
            raise UnreadableUpload(f"the upload cannot be read: {exc.strerror}") from exc
        owned = True
    else:
        zip_path, fh, owned = None, source, False
    try:
        fh.seek(0)
        return _validate_open(fh, zip_path, limits, keep)
    finally:
        if owned:
            fh.close()
        else:
            fh.seek(0)


def _validate_open(
    fh: BinaryIO, zip_path: Path | None, limits: ZipLimits, keep: KeepFiles | None
) -> ValidatedZip:
    check_directory(fh, limits)
    # The directory is now known to be small: zipfile may read it.
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, NotImplementedError, ValueError) as exc:  # e.g. "zip file version 23.1"
        raise ValidationError(f"the upload is not a valid zip archive ({exc})") from exc
    except OSError as exc:
        raise UnreadableUpload(f"the upload cannot be read: {exc}") from exc
    with zf:
        infos = zf.infolist()
        if len(infos) > limits.max_entries:
            raise ValidationError(
                f"the zip has {len(infos)} entries; the limit is {limits.max_entries} files and folders"
            )
        files: dict[str, list[str]] = {}
        members: dict[str, zipfile.ZipInfo] = {}
        dirs: set[str] = set()
        declared_total = 0
        for info in infos:
            name = info.filename
            if name.startswith(_IGNORED_PREFIXES) or name.rsplit("/", 1)[-1] in _IGNORED_BASENAMES:
                if any(git_refuses(part) for part in name.split("/")):  # the publisher extracts these too
                    raise ValidationError(
                        f"the file name {name[:120]!r} is inside a git folder; remove the .git folder"
                    )
                continue
            _check_type(info)
            parts = _split_name(name, limits)
            if not parts:
                continue
            joined = "/".join(parts)
            mode = (info.external_attr >> 16) & 0xFFFF
            if info.is_dir() or stat.S_ISDIR(mode):
                dirs.add(joined)
                continue
            if joined in files:
                raise ValidationError(f"the zip contains {joined!r} twice")
            if info.file_size > limits.max_file_bytes:
                raise ValidationError(
                    f"{joined!r} is {_mib(info.file_size)} uncompressed; the limit per file is "
                    f"{_mib(limits.max_file_bytes)}"
                )
            declared_total += info.file_size
            if declared_total > limits.max_total_bytes:
                raise ValidationError(
                    "the zip would decompress to more than "
                    f"{_mib(limits.max_total_bytes)}; remove large files"
                )
            files[joined] = parts
            members[joined] = info
        for parts in files.values():
            for i in range(1, len(parts)):
                if "/".join(parts[:i]) in files:
                    raise ValidationError(f"{'/'.join(parts[:i])!r} is both a file and a folder in the zip")
        prefix = _strip_top_folder(files, dirs)
        entries = []
        for path in sorted(files):
            info = members[path]
            entries.append(ZipEntry(member=info.filename, path=path[len(prefix) :], size=info.file_size))
        # Read everything once, capped, to prove the declared sizes and compute the content hash; keep the
        # bytes of the files asked for.
        wanted = set(keep(entries)) if keep is not None else set()
        kept: dict[str, bytes] = {}
        digest = hashlib.sha256()
        budget = limits.max_total_bytes
        for entry in entries:
            file_hash = hashlib.sha256()
            chunks: list[bytes] | None = [] if entry.path in wanted else None

            def sink(chunk: bytes, file_hash=file_hash, chunks=chunks) -> None:
                file_hash.update(chunk)
                if chunks is not None:
                    chunks.append(chunk)

            produced = read_member_capped(zf, entry, budget, sink)
            if chunks is not None:
                kept[entry.path] = b"".join(chunks)
            budget -= produced
            digest.update(f"{entry.path}\0{produced}\0{file_hash.hexdigest()}\n".encode())
        return ValidatedZip(
            zip_path=zip_path,
            entries=tuple(entries),
            content_hash=digest.hexdigest(),
            total_bytes=limits.max_total_bytes - budget,
            has_requirements=any(e.path == "requirements.txt" for e in entries),
            stripped_prefix=prefix,
            limits=limits,
            kept=kept,
        )
