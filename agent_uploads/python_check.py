"""Checks of an uploaded agent that need no build: its Python files must at least compile.

The zip's structure is ``agent_uploads.zip_validation``'s; a syntax error would otherwise only show up
minutes later, in the smoke test. The upload form and the API apply it (``web.forms.check_upload``) to the
sources the validating read kept (``sources_to_compile``, ``first_error_in``), so the zip is not opened
again; ``first_syntax_error`` reads a raw zip (one the validator refuses: its syntax error is still told
first). This compiles (never runs) the entry file (``player.py``, else a Kaggle-style ``main.py``) and
the other Python files beside it, and words the first error the way Python would print it.

It runs inside the upload request, so its cost is bounded, whatever the zip: at most
``MAX_TOTAL_SOURCE_BYTES`` of source are compiled in all (the entry file first, then its siblings by name;
files past the budget are left to the smoke test). Compiling dense code costs about 0.6 s per MiB on this
machine's loaded cores: without the budget, a 320 KB zip of 200 one-MiB modules held a web worker 333 s.
Source too deeply nested or too large for the compiler is reported as the uploader's error (Python would
refuse to run it too), never a server error.
"""

from __future__ import annotations

import lzma
import zipfile
import zlib
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from agent_uploads.zip_validation import ValidatedZip, ZipEntry

#: The files the harness imports, in the order it looks for them (as ``run_duel``'s harness does).
ENTRY_FILES = ("player.py", "main.py", "submission.py")
#: Python files larger than this are not compiled here (generated code, vendored data); the smoke test
#: still catches their errors.
MAX_SOURCE_BYTES = 512 * 1024
#: At most this many Python files beside the entry file are compiled...
MAX_SOURCES = 200
#: ...and at most this many bytes of source in all (the entry file included).
MAX_TOTAL_SOURCE_BYTES = 512 * 1024


def _entry_folder(names: list[str]) -> str | None:
    """The folder prefix ("" or "top/") holding the entry file, as the builder resolves it."""
    if any(entry in names for entry in ENTRY_FILES):
        return ""
    tops = {name.split("/", 1)[0] for name in names if "/" in name and not name.startswith("__MACOSX/")}
    if len(tops) == 1:
        (top,) = tops
        if any(f"{top}/{entry}" in names for entry in ENTRY_FILES):
            return top + "/"
    return None


def _read_capped(archive: zipfile.ZipFile, name: str, limit: int = MAX_SOURCE_BYTES) -> bytes | None:
    with archive.open(name) as fh:
        data = fh.read(limit + 1)
    return None if len(data) > limit else data


def syntax_error(source: bytes, shown_name: str) -> str | None:
    """Python's own message for the first syntax error of ``source``, or ``None`` when it compiles."""
    try:
        compile(source, shown_name, "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"{shown_name}, line {exc.lineno}" if exc.lineno else shown_name
        text = f"{where}: {exc.msg}"
        if exc.text:
            line = exc.text.rstrip("\n")
            stripped = line.lstrip()
            text += "\n    " + stripped
            if exc.offset:
                caret = max(0, exc.offset - 1 - (len(line) - len(stripped)))
                text += "\n    " + " " * caret + "^"
        return text
    except ValueError as exc:  # e.g. null bytes in the file
        return f"{shown_name}: {exc}"
    except (RecursionError, MemoryError):  # nesting or expressions deeper than the compiler handles
        return f"{shown_name}: too deeply nested for Python to compile (Python would refuse to run it too)"
    return None


def sources_to_compile(entries: Sequence[ZipEntry]) -> list[str]:
    """The paths of a validated zip whose sources are compiled, in order: the entry file, then the Python
    files beside it by name, within ``MAX_SOURCES`` and the byte budget (a file too large for what is left
    is skipped; a smaller one after it may still fit). Decided from the sizes the validator proved."""
    sizes = {entry.path: entry.size for entry in entries}
    entry_file = next((name for name in ENTRY_FILES if name in sizes), None)
    if entry_file is None:
        return []
    siblings = sorted(p for p in sizes if p.endswith(".py") and "/" not in p and p != entry_file)
    chosen = []
    budget = MAX_TOTAL_SOURCE_BYTES
    for path in [entry_file, *siblings[:MAX_SOURCES]]:
        if sizes[path] > min(MAX_SOURCE_BYTES, budget):
            continue  # left to the smoke test
        chosen.append(path)
        budget -= sizes[path]
    return chosen


def first_error_in(validated: ValidatedZip) -> str | None:
    """The first syntax error among ``sources_to_compile`` of a zip validated with those files kept
    (``agent_uploads.upload.read_upload``), or ``None``."""
    for path in sources_to_compile(validated.entries):
        error = syntax_error(validated.kept[path], path)
        if error:
            return error
    return None


def first_syntax_error(upload: IO[bytes]) -> str | None:
    """Compile the uploaded zip's entry file and the Python files beside it; the first error, or ``None``.

    Returns ``None`` as well for archives this check cannot read (the zip validator explains those). The
    file position of ``upload`` is restored.
    """
    position = upload.tell()
    try:
        with zipfile.ZipFile(upload) as archive:
            names = [i.filename for i in archive.infolist() if i.filename and not i.is_dir()]
            prefix = _entry_folder(names)
            if prefix is None:
                return None
            entry = next(prefix + e for e in ENTRY_FILES if prefix + e in names)
            siblings = sorted(
                n
                for n in names
                if n.startswith(prefix) and n.endswith(".py") and "/" not in n[len(prefix) :] and n != entry
            )
            budget = MAX_TOTAL_SOURCE_BYTES
            for name in [entry, *siblings[:MAX_SOURCES]]:
                limit = min(MAX_SOURCE_BYTES, budget)
                if archive.getinfo(name).file_size > limit:
                    continue  # left to the smoke test (a smaller sibling may still fit)
                source = _read_capped(archive, name, limit)
                if source is None:  # its directory entry understated its size
                    break
                budget -= len(source)
                error = syntax_error(source, name[len(prefix) :])
                if error:
                    return error
    except (
        zipfile.BadZipFile,
        OSError,
        RuntimeError,
        NotImplementedError,
        EOFError,
        ValueError,
        zlib.error,
        lzma.LZMAError,
    ):
        return None  # a corrupt archive: the zip validator words the refusal
    finally:
        upload.seek(position)
    return None
