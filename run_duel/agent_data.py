"""An agent's persistent data folder: filled before its code runs, read back after its last move.

A sandbox gives an agent whose ``Limits.data_mb`` is positive a writable folder of that size at
``DATA_DIR_IN_SANDBOX`` (the agent finds it in ``$ARENA_DATA_DIR``): a tmpfs inside the sandbox, so the
kernel enforces the cap and nothing of it lives on the host's disk. The platform keeps the folder between
an agent's duels as a tar (``AgentData.archive``): the sandbox writes it into the fresh folder before any
code of the agent runs (``fill_folder``), and the referee reads the folder back when the duel is over and
the agent is still running (``read_folder``), into ``AgentData.saved``.

The referee reaches the folder from outside, through the sandbox's mount namespace
(``/proc/<pid>/root/arena-data``; a plain folder for the unisolated local sandbox). Whatever the agent
left there is hostile input: both directions walk the tree one component at a time through directory
descriptors, never follow a symbolic link (an absolute link would resolve against the referee's root,
not the agent's) and only ever create or read regular files and folders; every size, count and depth
is capped.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import tarfile
from dataclasses import dataclass

#: Where the folder is inside every sandbox (and the value of ``$ARENA_DATA_DIR``).
DATA_DIR_IN_SANDBOX = "/arena-data"
#: The variable that tells the agent where its folder is.
DATA_DIR_ENV = "ARENA_DATA_DIR"
#: Files and folders a data folder may hold (the cap in bytes is the game's / platform's).
MAX_ENTRIES = 10_000
#: How deep folders may nest.
MAX_DEPTH = 32
#: Longest file or folder name, in bytes (the usual file-system limit).
MAX_NAME_BYTES = 255
MB = 1024 * 1024
#: The folder's size when neither the platform (``AGENT_DATA_MB``) nor the game (``data_mb``) says.
DEFAULT_DATA_MB = 10

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
#: Why writing an archive's member into a fresh, empty folder of the right size fails when the archive's
#: own content is at fault: a name twice or a file where a folder goes (or whatever an agent that ran
#: before the fill planted there), more inodes or bytes than the folder takes, a name or file too big.
_CONTENT_ERRNOS = frozenset(
    {
        errno.EEXIST,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ELOOP,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.ENAMETOOLONG,
        errno.EFBIG,
        errno.EMLINK,
    }
)


class DataError(ValueError):
    """A data folder or archive breaks the rules (too big, too many files, too deep, malformed)."""


@dataclass
class AgentData:
    """An agent's persistent folder for one duel: what it starts with and, after the duel, what it left.

    The referee fills ``saved`` (the folder as a tar, possibly of an empty folder) or ``problem`` (one
    sentence for the agent's owner) when ``save`` is set; a relaunched agent starts again from
    ``archive``. When ``archive`` cannot be written into the folder because of its own content
    (``fill_folder`` raises ``DataError``), the seat is charged, ``refused`` is set and ``saved`` is an
    empty folder: the platform stores that, so the next duel starts afresh, and notes ``problem``."""

    archive: bytes = b""  # the folder's content as an uncompressed POSIX tar; b"" is an empty folder
    save: bool = True  # read the folder back at the end of the duel
    saved: bytes | None = None
    problem: str = ""
    refused: bool = False  # ``archive`` could not be restored: the folder is reset (``saved`` empty)


def archive_of(files: dict[str, bytes]) -> bytes:
    """A data archive holding ``files`` (path -> content; folders are implied), as the referee writes
    one; ``archive_of({})`` is a valid tar of an empty folder."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def files_of(archive: bytes) -> dict[str, bytes]:
    """The regular files of a data archive (path -> content); ``{}`` for ``b""``."""
    if not archive:
        return {}
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isreg()}  # type: ignore[union-attr]


def _check_name(name: str) -> list[str]:
    parts = name.split("/")
    if name.startswith("/") or not name or any(p in ("", ".", "..") for p in parts):
        raise DataError(f"bad path {name!r} in the data archive")
    if len(parts) > MAX_DEPTH:
        raise DataError(f"{name!r} is nested deeper than {MAX_DEPTH} folders")
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES or "\0" in part:
            raise DataError(f"bad name {part!r} in the data archive")
    return parts


def _members(archive: bytes, cap_bytes: int) -> list[tuple[tarfile.TarInfo, list[str]]]:
    if not archive:
        return []
    members: list[tuple[tarfile.TarInfo, list[str]]] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
            for info in tar:
                if not (info.isreg() or info.isdir()) or info.issparse():
                    raise DataError(f"{info.name!r} is neither a file nor a folder")
                if info.offset_data + info.size > len(archive):
                    raise DataError(f"the archive ends inside {info.name!r}")
                members.append((info, _check_name(info.name.rstrip("/") if info.isdir() else info.name)))
                if len(members) > MAX_ENTRIES:
                    raise DataError(f"more than {MAX_ENTRIES} files and folders")
                total += info.size if info.isreg() else 0
                if total > cap_bytes:
                    raise DataError(f"more than {cap_bytes / MB:g} MB of files")
    except tarfile.TarError as exc:
        raise DataError(f"not a tar archive: {exc}") from exc
    return members


def check_archive(archive: bytes, cap_bytes: int) -> tuple[int, int]:
    """``(file bytes, entries)`` of a data archive; raises ``DataError`` when it breaks the rules."""
    members = _members(archive, cap_bytes)
    return sum(info.size for info, _ in members if info.isreg()), len(members)


def _open_dir(parent_fd: int, name: str, *, create: bool, uid: int | None) -> int:
    if create:
        try:
            os.mkdir(name, 0o700, dir_fd=parent_fd)
        except FileExistsError:
            pass
        else:
            if uid is not None:
                os.chown(name, uid, uid, dir_fd=parent_fd, follow_symlinks=False)
    return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)


def fill_folder(archive: bytes, root: str, cap_bytes: int, *, uid: int | None = None) -> None:
    """Write ``archive`` into the (empty) folder ``root``, owned by ``uid`` when given (else by us).

    Run before any code of the agent does. Raises ``DataError`` when the archive is at fault (it breaks a
    rule, or one of its members cannot be written for a reason of its own: ``_CONTENT_ERRNOS``), else
    ``OSError`` when the folder cannot be reached or written (the sandbox's problem, not the agent's)."""
    members = _members(archive, cap_bytes)
    if not members:
        return
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        for info, parts in members:
            try:
                _write_member(archive, root_fd, info, parts, uid)
            except OSError as exc:
                if exc.errno not in _CONTENT_ERRNOS:
                    raise
                raise DataError(f"{info.name!r} cannot be written: {exc.strerror}") from exc
    finally:
        os.close(root_fd)


def _write_member(
    archive: bytes, root_fd: int, info: tarfile.TarInfo, parts: list[str], uid: int | None
) -> None:
    """Create one folder or file of the archive under ``root_fd`` (an uncompressed tar: a file's bytes
    are a slice of it)."""
    fds = [root_fd]
    try:
        for part in parts if info.isdir() else parts[:-1]:
            fds.append(_open_dir(fds[-1], part, create=True, uid=uid))
        if info.isdir():
            os.fchmod(fds[-1], 0o700 | (info.mode & 0o755))
            return
        fd = os.open(parts[-1], _CREATE_FLAGS, 0o600, dir_fd=fds[-1])
        try:
            data = memoryview(archive)[info.offset_data : info.offset_data + info.size]
            while data:
                data = data[os.write(fd, data) :]
            if uid is not None:
                os.fchown(fd, uid, uid)
            os.fchmod(fd, 0o644 | (info.mode & 0o111))
            os.utime(fd, (info.mtime, info.mtime))
        finally:
            os.close(fd)
    finally:
        for fd in fds[1:]:
            os.close(fd)


class _Packer:
    """Reads a folder tree the agent controls into a tar, within the caps (see the module docstring)."""

    def __init__(self, cap_bytes: int) -> None:
        self.cap_bytes = cap_bytes
        self.total = 0
        self.entries = 0
        self.skipped: list[str] = []
        self.out = bytearray()  # the tar, written block by block (headers as tarfile makes them)

    def _count(self, path: str) -> None:
        self.entries += 1
        if self.entries > MAX_ENTRIES:
            raise DataError(f"the data folder holds more than {MAX_ENTRIES} files and folders")
        if len(path.split("/")) > MAX_DEPTH:
            raise DataError(f"the data folder nests folders deeper than {MAX_DEPTH} ({path!r})")

    def walk(self, dir_fd: int, prefix: str) -> None:
        with os.scandir(dir_fd) as entries:
            names = sorted(entry.name for entry in entries)
        for name in names:
            path = f"{prefix}{name}"
            try:
                name.encode("utf-8")
            except UnicodeEncodeError:
                self.skipped.append(repr(path))
                continue
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                self._count(path)
                child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
                try:
                    self._add_dir(path, os.fstat(child))
                    self.walk(child, path + "/")
                finally:
                    os.close(child)
            elif stat.S_ISREG(st.st_mode):
                self._count(path)
                self._add_file(dir_fd, name, path)
            else:
                self.skipped.append(path)  # links, pipes, sockets: never followed, never kept

    def _add_dir(self, path: str, st: os.stat_result) -> None:
        info = tarfile.TarInfo(path)
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        info.mtime = int(st.st_mtime)
        self._append(info)

    def _add_file(self, dir_fd: int, name: str, path: str) -> None:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self.skipped.append(path)
                return
            room = self.cap_bytes - self.total
            chunks = []
            size = 0
            while chunk := os.read(fd, min(MB, room - size + 1)):
                chunks.append(chunk)
                size += len(chunk)
                if size > room:
                    raise DataError(f"the data folder holds more than {self.cap_bytes / MB:g} MB of files")
            self.total += size
            info = tarfile.TarInfo(path)
            info.size = size
            info.mode = 0o755 if st.st_mode & 0o111 else 0o644
            info.mtime = int(st.st_mtime)
            self._append(info, chunks)
        finally:
            os.close(fd)

    def _append(self, info: tarfile.TarInfo, chunks: list[bytes] = ()) -> None:  # type: ignore[assignment]
        self.out += info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        for chunk in chunks:
            self.out += chunk
        self.out += bytes(-info.size % tarfile.BLOCKSIZE)

    def finish(self) -> bytes:
        self.out += bytes(2 * tarfile.BLOCKSIZE)  # the end-of-archive marker
        return bytes(self.out)


def read_folder(root: str, cap_bytes: int) -> tuple[bytes, list[str]]:
    """The folder ``root`` as a tar, and the paths left out (links and other special files, names that
    are not UTF-8). Raises ``DataError`` when it breaks the caps, ``OSError`` when it cannot be read."""
    packer = _Packer(cap_bytes)
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        packer.walk(root_fd, "")
    finally:
        os.close(root_fd)
    return packer.finish(), packer.skipped


def load_host_folder(folder: str, cap_bytes: int) -> AgentData:
    """A folder of this machine as an agent's data (the CLI's ``--data-1``/``--data-2``)."""
    archive, skipped = read_folder(folder, cap_bytes)
    if skipped:
        raise DataError(f"{folder}: links and special files cannot go in a data folder: {skipped[:5]}")
    return AgentData(archive=archive)


def store_in_host_folder(archive: bytes, folder: str, cap_bytes: int) -> None:
    """Replace the content of ``folder`` (of this machine) with ``archive``."""
    check_archive(archive, cap_bytes)
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    fill_folder(archive, folder, cap_bytes)


def save_from(data: AgentData, root: str | None, cap_bytes: int, *, running: bool) -> None:
    """Read the folder back into ``data.saved``, or say in ``data.problem`` why it was not (the agent
    was no longer running, the folder broke a cap or could not be read)."""
    if not running or root is None:
        data.problem = (
            "your agent was not running at the end of the duel (it failed to start, crashed or ran out of "
            "time or memory), so its data folder keeps what it had before this duel"
        )
        return
    try:
        data.saved, skipped = read_folder(root, cap_bytes)
    except DataError as exc:
        data.problem = f"{exc}: the folder keeps what it had before this duel"
        return
    except OSError as exc:
        reason = exc.strerror or exc
        data.problem = f"the data folder could not be read ({reason}); it keeps what it had before this duel"
        return
    if skipped:
        shown = ", ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else "")
        data.problem = f"saved without {len(skipped)} link(s) or special file(s) that are never kept: {shown}"
