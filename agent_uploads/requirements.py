"""An upload's ``requirements.txt``: which lines it may hold, read without fetching anything.

Requirement lines only (``name[extras] <specifiers> ; <markers>``, comments allowed): options
(``--index-url``, ``-r``, ``-e``...), direct URLs and line continuations are refused naming the line, so a
submission can never point the host's pip anywhere. Resolving the requirements into wheels is the
builder's (``builder.wheels``).
"""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement

from agent_uploads.zip_validation import ValidatedZip, read_member_capped

REQUIREMENTS_FILE = "requirements.txt"
#: ``requirements.txt`` is read with at most this many bytes (a larger one is refused).
MAX_REQUIREMENTS_BYTES = 64 * 1024
MAX_REQUIREMENT_LINES = 200
_COMMENT = re.compile(r"(^|\s)#.*$")


class RequirementsError(Exception):
    """The submission's requirements cannot be installed; ``str()`` is meant for its author."""


def parse_requirements(text: str) -> list[str]:
    """The requirement lines of ``requirements.txt``, normalised; raise ``RequirementsError`` for anything
    else (options, URLs, paths, line continuations, unparsable lines)."""
    lines = text.splitlines()
    wanted: list[str] = []
    for number, raw in enumerate(lines, 1):
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        shown = f"requirements.txt line {number} ({line[:80]!r})"
        if line.endswith("\\"):
            raise RequirementsError(f"{shown}: line continuations are not supported; write one per line")
        if line.startswith("-"):
            raise RequirementsError(
                f"{shown}: options are not accepted (this server fetches packages only from the index its "
                "operator configured); list package names and versions only"
            )
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise RequirementsError(f"{shown}: not a package requirement ({exc})") from None
        if requirement.url:
            raise RequirementsError(
                f"{shown}: direct URLs are not accepted; name the package and version, it is fetched from "
                "this server's package index"
            )
        wanted.append(str(requirement))
        if len(wanted) > MAX_REQUIREMENT_LINES:
            raise RequirementsError(f"requirements.txt lists more than {MAX_REQUIREMENT_LINES} packages")
    return wanted


def read_package_file(validated: ValidatedZip, name: str, limit: int) -> str | None:
    """The text of the validated zip's top-level file ``name`` (``None``: absent), read with ``limit``
    bytes at most (``RequirementsError`` past it)."""
    entry = next((e for e in validated.entries if e.path == name), None)
    if entry is None:
        return None
    if entry.size > limit:
        raise RequirementsError(f"{name} is larger than {limit // 1024} KiB")
    data = validated.kept.get(name)
    if data is None:  # not kept by the read that validated it (``agent_uploads.upload.read_upload`` keeps it)
        chunks: list[bytes] = []
        with validated.open_zip() as zf:
            read_member_capped(zf, entry, limit, chunks.append)
        data = b"".join(chunks)
    return data.decode("utf-8", errors="replace")
