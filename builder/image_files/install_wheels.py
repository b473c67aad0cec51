"""Unpack a Python agent's wheels into its packages folder, counting every byte and file as it writes.

Run inside the build container (no network), as the agent user, by ``install_packages.sh``::

    python3 -I -B install_wheels.py TARGET MAX_BYTES MAX_FILES WHEEL...

It does what ``pip install --no-deps --target TARGET`` does with wheels, without pip: a wheel is a zip
(PEP 427); its files go to TARGET, those of ``<name>.data/purelib`` and ``platlib`` too, ``scripts`` to
``TARGET/bin`` (a ``#!python`` line becomes ``#!/usr/bin/python3``), ``headers`` to
``TARGET/include/python/<name>`` and ``data`` to TARGET; a later wheel's file replaces an earlier one's;
the ``.py`` files are compiled to ``__pycache__`` as pip does. Console-script wrappers
(``entry_points.txt``) are not generated: an agent imports its packages.

Unlike pip, nothing is written past the caps: every chunk is counted *before* it is written, so a wheel
whose directory lies about its sizes, a compression bomb (more than 200:1 past 1 MiB for one file) or a
wheel of a million files stops at the cap, with one ``PACKAGES ERROR: ...`` line naming the package.
Files and folders created count against MAX_FILES, written bytes (bytecode included) against MAX_BYTES.
Nothing of a wheel is ever run: this script only inflates and compiles (``compile`` never executes).
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import sys
import zipfile
import zlib

CHUNK = 1 << 16
MAX_RATIO = 200
RATIO_FLOOR_BYTES = 1 << 20


class Refused(Exception):
    """The packages cannot be installed; ``str()`` is one line for the submission's author."""


class Budget:
    """What the packages may still write."""

    def __init__(self, max_bytes: int, max_files: int) -> None:
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.bytes = 0
        self.files = 0
        self.wheel_bytes = 0  # inflated from the wheel being unpacked,
        self.wheel_limit = 0  # at most MAX_RATIO times its size (past RATIO_FLOOR_BYTES)

    def add_file(self) -> None:
        if self.files + 1 > self.max_files:
            raise Refused(
                f"the installed packages would have more than {self.max_files} files and "
                f"folders, over this server's limit of {self.max_files}"
            )
        self.files += 1

    def add_bytes(self, count: int) -> None:
        if self.wheel_limit and self.wheel_bytes + count > self.wheel_limit:
            raise Refused(f"the wheel inflates more than {MAX_RATIO} to 1: a compression bomb")
        self.wheel_bytes += count
        if self.bytes + count > self.max_bytes:
            raise Refused(
                "the installed packages would take more than "
                f"{self.max_bytes // 2**20} MiB, over this server's limit of {self.max_bytes // 2**20} MiB"
            )
        self.bytes += count


def _makedirs(target: str, relative: list[str], budget: Budget) -> str:
    path = target
    for part in relative:
        path = os.path.join(path, part)
        if os.path.isdir(path) and not os.path.islink(path):
            continue
        budget.add_file()
        os.mkdir(path, 0o755)  # fails on an existing file: "used as a file and a folder"
    return path


def _destination(name: str, data_dir: str, dist_name: str) -> tuple[list[str], bool]:
    """(path components under the target, is a script) of a wheel member, or ``Refused``."""
    if name.startswith("/") or "\\" in name or "\0" in name:
        raise Refused(f"unsafe path {name[:200]!r} in the wheel")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Refused(f"unsafe path {name[:200]!r} in the wheel")
    if parts[0] != data_dir:
        return parts, False
    if len(parts) < 3:
        raise Refused(f"unexpected entry {name[:200]!r} in the wheel's .data folder")
    scheme, rest = parts[1], parts[2:]
    if scheme in ("purelib", "platlib", "data"):
        return rest, False
    if scheme == "scripts":
        return ["bin", *rest], True
    if scheme == "headers":
        return ["include", "python", dist_name, *rest], False
    raise Refused(f"unknown install scheme {scheme!r} in the wheel ({name[:200]!r})")


def _write_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, script: bool, budget: Budget
) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
    if not os.path.lexists(path):
        budget.add_file()
    produced = 0
    first = True
    fd = os.open(path, flags, 0o644)
    try:
        with zf.open(info) as source, os.fdopen(fd, "wb", closefd=False) as out:
            while True:
                chunk = source.read(CHUNK)
                if not chunk:
                    break
                if first and script and chunk.startswith(b"#!python"):
                    chunk = b"#!/usr/bin/python3" + chunk[len(b"#!python") :]
                first = False
                produced += len(chunk)
                if produced > info.file_size + (len(b"/usr/bin/python3") if script else 0):
                    raise Refused(f"{info.filename[:200]!r} inflates past the size the wheel declares")
                if produced > RATIO_FLOOR_BYTES and produced > max(info.compress_size, 1) * MAX_RATIO:
                    raise Refused(
                        f"{info.filename[:200]!r} inflates more than {MAX_RATIO} to 1: a compression bomb"
                    )
                budget.add_bytes(len(chunk))
                out.write(chunk)
    finally:
        os.close(fd)
    if script:
        os.chmod(path, 0o755)  # noqa: S103 (a script: read-only for all once installed)


def _header(zf: zipfile.ZipFile, member: str, field: str) -> str:
    """The value of ``field`` in the email-style file ``member`` (its first 64 KiB), "" if absent."""
    with zf.open(member) as handle:
        text = handle.read(CHUNK).decode("utf-8", "replace")
    values = [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith(f"{field}:")]
    return values[0] if values else ""


def _dist_info(zf: zipfile.ZipFile, filename: str) -> str:
    """The wheel's ``<name>-<version>.dist-info`` folder (it must hold WHEEL, version 1.x)."""
    tops = {n.split("/", 1)[0] for n in zf.namelist() if n.split("/", 1)[0].endswith(".dist-info")}
    if len(tops) != 1:
        raise Refused(f"{filename} is not a valid wheel (it needs exactly one .dist-info folder)")
    (top,) = tops
    try:
        version = _header(zf, f"{top}/WHEEL", "Wheel-Version")
    except KeyError:
        raise Refused(f"{filename} is not a valid wheel (no {top}/WHEEL)") from None
    if not version.startswith("1."):
        raise Refused(f"{filename} is a wheel of version {version or '?'}; only 1.x can be installed")
    return top


def install_wheel(path: str, target: str, budget: Budget, compiled: dict[str, str]) -> None:
    filename = os.path.basename(path)
    parts = filename[: -len(".whl")].split("-")
    package = f"{parts[0]} {parts[1] if len(parts) > 1 else ''} ({filename})".replace("  ", " ")
    budget.wheel_bytes = 0
    budget.wheel_limit = max(RATIO_FLOOR_BYTES, os.path.getsize(path) * MAX_RATIO)
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if budget.files + len(infos) > budget.max_files:
                raise Refused(
                    f"the wheel holds {len(infos)} files: the installed packages would have more than "
                    f"{budget.max_files} files and folders, over this server's limit of {budget.max_files}"
                )
            top = _dist_info(zf, filename)
            data_dir = top[: -len(".dist-info")] + ".data"
            try:  # headers go to include/python/<the project's name>, as pip's --target puts them
                dist_name = _header(zf, f"{top}/METADATA", "Name")
            except KeyError:
                dist_name = ""
            if not dist_name or "/" in dist_name or dist_name in (".", ".."):
                dist_name = top[: -len(".dist-info")].rsplit("-", 1)[0]
            for info in infos:
                relative, script = _destination(info.filename, data_dir, dist_name)
                if info.is_dir():
                    _makedirs(target, relative, budget)
                    continue
                folder = _makedirs(target, relative[:-1], budget)
                destination = os.path.join(folder, relative[-1])
                _write_member(zf, info, destination, script, budget)
                if destination.endswith(".py") and not script and relative[0] not in ("bin", "include"):
                    compiled[destination] = package  # a later wheel's file replaces it
    except Refused as exc:
        raise Refused(f"{package}: {exc}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError) as exc:
        raise Refused(f"{package} is not a valid wheel: {exc}") from None
    except OSError as exc:
        raise Refused(f"{package} could not be unpacked: {exc}") from None


def compile_sources(paths: dict[str, str], budget: Budget) -> None:
    """Bytecode for every unpacked .py file (``paths``: file -> its package), as pip does, each checked
    against the caps before it is written; a file that does not compile is left without (as pip does)."""
    budget.wheel_limit = 0
    for source_path, package in paths.items():
        try:
            _compile_one(source_path, budget)
        except Refused as exc:
            raise Refused(f"{package}, its bytecode: {exc}") from None
        except OSError as exc:
            raise Refused(f"{package}, its bytecode could not be written: {exc}") from None


def _compile_one(source_path: str, budget: Budget) -> None:
    try:
        with open(source_path, "rb") as handle:
            source = handle.read()
        code = compile(source, source_path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, OSError, RecursionError, MemoryError):
        return
    stat = os.stat(source_path)
    data = (
        importlib.util.MAGIC_NUMBER
        + (0).to_bytes(4, "little")  # a timestamp-based pyc (PEP 552)
        + (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
        + (stat.st_size & 0xFFFFFFFF).to_bytes(4, "little")
        + marshal.dumps(code)
    )
    cache = importlib.util.cache_from_source(source_path)
    folder = os.path.dirname(cache)
    if not os.path.isdir(folder):
        budget.add_file()
        os.mkdir(folder, 0o755)
    budget.add_file()
    budget.add_bytes(len(data))
    with open(cache, "wb") as out:
        out.write(data)


def main(argv: list[str]) -> int:
    target, max_bytes, max_files, *wheels = argv
    budget = Budget(int(max_bytes), int(max_files))
    compiled: dict[str, str] = {}  # .py file -> the package it came from
    try:
        for wheel in sorted(wheels):
            install_wheel(wheel, target, budget, compiled)
        compile_sources(compiled, budget)
    except Refused as exc:
        print(f"PACKAGES ERROR: {exc}", flush=True)
        return 1
    print(
        f"unpacked {len(wheels)} wheel(s): {budget.bytes / 2**20:.1f} MiB in {budget.files} files "
        "and folders",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
