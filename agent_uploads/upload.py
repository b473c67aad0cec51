"""Reading an upload once: ``read_upload`` validates the zip and keeps, from that same pass, the bytes of
every small file a later step reads (the package files, the Python sources the syntax check compiles).

The result (``ValidatedZip``) then answers everything the upload's way through the arena asks, without
opening the zip again: the file list and content hash (``entries``, ``content_hash``), the language
(``language``), the files the agent format is detected from (``root_files``), the syntax check
(``python_check.first_error_in``), what the local sandbox can honour and the packages to install
(``read_package_file``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from agent_uploads.conda_env import ENVIRONMENT_FILE, MAX_ENVIRONMENT_BYTES
from agent_uploads.python_check import sources_to_compile
from agent_uploads.requirements import MAX_REQUIREMENTS_BYTES, REQUIREMENTS_FILE
from agent_uploads.zip_validation import ValidatedZip, ZipEntry, ZipLimits, validate_zip

#: The package files (at the top of the agent's folder) and the most of each that is ever read.
PACKAGE_FILES = {REQUIREMENTS_FILE: MAX_REQUIREMENTS_BYTES, ENVIRONMENT_FILE: MAX_ENVIRONMENT_BYTES}


def files_to_keep(entries: Sequence[ZipEntry]) -> set[str]:
    """The package files small enough to be read, and the Python sources the syntax check compiles."""
    kept = {e.path for e in entries if e.path in PACKAGE_FILES and e.size <= PACKAGE_FILES[e.path]}
    return kept | set(sources_to_compile(entries))


def read_upload(source: Path | str | BinaryIO, limits: ZipLimits | None = None) -> ValidatedZip:
    """Validate the zip at ``source`` (a path, or a seekable binary file) in one read, keeping
    ``files_to_keep``; raises ``ValidationError`` (``DirectoryRefused``, ``UnreadableUpload``)."""
    return validate_zip(source, limits, keep=files_to_keep)
