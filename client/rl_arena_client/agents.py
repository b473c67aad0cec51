"""Agent folders on your machine: find them, check that their Python compiles, zip them for upload.

An agent is a folder holding ``player.py`` (a ``Player`` class), or a Kaggle-style ``main.py`` defining
``agent(observation, configuration)``, plus whatever it loads. ``random`` and ``minimax`` name the
example opponents bundled with this client when no such folder exists. The arena also takes C++
(``main.cpp``) and JavaScript (``main.js``) agents: the client uploads those folders, while its local
duels and checks run Python agents only (the arena compiles and runs the others in its Docker sandbox).
"""

from __future__ import annotations

import atexit
import io
import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path

from rl_arena_client.api import CliError
from run_duel.api import AGENT_ENTRY_FILES

#: Entry files the arena accepts in an upload, in the order it looks for them (the arena's own list is
#: ``agent_uploads.languages.ENTRY_FILES``; a test keeps the two equal). The first one present decides the
#: language.
UPLOAD_ENTRY_FILES = (*AGENT_ENTRY_FILES, "main.cpp", "main.js")
#: Folders never zipped for upload.
SKIPPED_NAMES = {"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", ".mypy_cache", ".pytest_cache"}
#: Example opponents shipped with the client (``rl-arena duel ... random``).
BUNDLED = Path(__file__).resolve().parent / "opponents"


def bundled_names() -> list[str]:
    """Names of the bundled example opponents."""
    return (
        sorted(p.name for p in BUNDLED.iterdir() if (p / "player.py").is_file()) if BUNDLED.is_dir() else []
    )


def entry_file(folder: Path) -> Path | None:
    """The file the arena imports: ``player.py``, else a Kaggle-style ``main.py``; ``None`` if neither."""
    for name in AGENT_ENTRY_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


def syntax_error(folder: Path) -> str | None:
    """Compile (never run) the entry file and the other ``.py`` files beside it; Python's first error."""
    entry = entry_file(folder)
    if entry is None:
        return None
    files = [entry, *sorted(p for p in folder.glob("*.py") if p != entry)]
    for path in files:
        try:
            source = path.read_bytes()
            compile(source, path.name, "exec", dont_inherit=True)
        except SyntaxError as exc:
            text = f"{path.name}, line {exc.lineno}: {exc.msg}"
            if exc.text:
                line = exc.text.rstrip("\n")
                stripped = line.lstrip()
                text += "\n    " + stripped
                if exc.offset:
                    text += "\n    " + " " * max(0, exc.offset - 1 - (len(line) - len(stripped))) + "^"
            return text
        except (ValueError, OSError) as exc:
            return f"{path.name}: {exc}"
    return None


def _extract(archive: Path) -> Path:
    target = Path(tempfile.mkdtemp(prefix="rl-arena-agent-"))
    target.chmod(0o755)  # the local sandbox's agent user must read it (as builder/extract.py leaves folders)
    atexit.register(shutil.rmtree, target, True)
    try:
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                if not (target / member).resolve().is_relative_to(target.resolve()):
                    raise CliError(f"{archive}: unsafe path {member!r} in the zip")
            zf.extractall(target)
    except zipfile.BadZipFile as exc:
        raise CliError(f"{archive} is not a valid zip file: {exc}") from exc
    found = sorted(
        (p.parent for name in AGENT_ENTRY_FILES for p in target.rglob(name)), key=lambda p: len(p.parts)
    )
    if not found:
        raise CliError(f"{archive}: the zip holds no player.py (nor a Kaggle-style main.py)")
    return found[0]


def zip_problem(path: Path) -> str | None:
    """Why ``path`` (an existing file) cannot be read as a zip, e.g. ``"not a valid zip: File is not a zip
    file"``; ``None`` when it opens and every member's checksum is right."""
    try:
        with zipfile.ZipFile(path) as zf:
            bad = zf.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, zlib.error) as exc:
        return f"not a valid zip: {exc}"
    if bad is not None:
        return f"not a valid zip: {bad!r} is damaged (its checksum does not match)"
    return None


def upload_entry(names: list[str]) -> str | None:
    """The entry file of a zip's member ``names`` as the arena resolves it (at the top, or inside one single
    top-level folder; the first of ``UPLOAD_ENTRY_FILES`` found), e.g. ``"bot/main.py"``; ``None``."""
    names = [n for n in names if not n.endswith("/") and not n.startswith("__MACOSX/")]
    present = set(names)
    found = next((e for e in UPLOAD_ENTRY_FILES if e in present), None)
    if found:
        return found
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names):
        prefix = f"{tops.pop()}/"
        found = next((e for e in UPLOAD_ENTRY_FILES if prefix + e in present), None)
        if found:
            return prefix + found
    return None


def read_zip_for_upload(path: Path) -> bytes:
    """The bytes of an agent zip to upload as they are, after the checks the arena would fail it on
    first: it must be a readable zip holding an entry file."""
    problem = zip_problem(path)
    if problem:
        raise CliError(f"{path}: {problem}")
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    if upload_entry(names) is None:
        raise CliError(
            f"{path}: the zip holds no entry file at its top or inside one single folder (player.py, a "
            "Kaggle main.py or submission.py, main.cpp or main.js)"
        )
    return path.read_bytes()


def resolve(ref: str) -> tuple[Path, str]:
    """``(folder, display name)`` for an agent given as a folder, a zip, or a bundled opponent's name."""
    path = Path(ref).expanduser()
    if path.is_file():
        problem = zip_problem(path)
        if problem:
            raise CliError(f"{ref}: {problem}")
        return _extract(path), path.stem
    if path.is_dir():
        if entry_file(path) is None:
            raise CliError(f"{ref}: no player.py (nor a Kaggle-style main.py) in this folder")
        return path.resolve(), path.resolve().name
    if "/" not in ref and (BUNDLED / ref / "player.py").is_file():
        return (BUNDLED / ref).resolve(), ref
    known = ", ".join(bundled_names())
    raise CliError(f"{ref}: no such folder or zip (bundled opponents: {known})")


def zip_folder(folder: Path) -> bytes:
    """Zip ``folder``'s contents (paths relative to it), skipping caches and version-control folders."""
    folder = folder.resolve()
    if not folder.is_dir():
        raise CliError(f"{folder} is not a folder")
    if not any((folder / name).is_file() for name in UPLOAD_ENTRY_FILES):
        raise CliError(
            f"{folder} has no player.py (an agent folder holds player.py, a Kaggle-style main.py, "
            "main.cpp or main.js at its top)"
        )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if any(part in SKIPPED_NAMES for part in rel.parts) or path.suffix == ".pyc":
                continue
            if path.is_file():
                zf.write(path, rel.as_posix())
    return buf.getvalue()
