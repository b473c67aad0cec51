"""What a server whose agents run in the local sandbox (``SANDBOX=local``, no Docker) can honour.

The local sandbox runs Python agents with the interpreter of the worker: the standard library and numpy,
nothing installed per agent. So a submission it cannot run as its owner asked is refused, naming what it
asks for, before a build is promised:

* a C++ (``main.cpp``) or JavaScript (``main.js``) agent: compiled and run only in the Docker sandbox;
* a package in ``requirements.txt`` or ``environment.yml`` other than numpy (which is always there: a
  numpy pin is answered by the sandbox's own numpy, and the build log says which version that is);
* a requirements or environment file that does not parse (its own message, naming the file and line).

``core.actions.submit_revision`` applies it at upload (the upload form, the API, hence ``rl-arena
submit``) on a local-sandbox server, and the local build applies it again (``builder.build_submission``).
"""

from __future__ import annotations

from importlib import metadata

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from agent_uploads.conda_env import ENVIRONMENT_FILE, MAX_ENVIRONMENT_BYTES, parse_environment
from agent_uploads.requirements import (
    MAX_REQUIREMENTS_BYTES,
    REQUIREMENTS_FILE,
    RequirementsError,
    parse_requirements,
    read_package_file,
)
from agent_uploads.zip_validation import ValidatedZip

#: What the local sandbox provides to every agent besides the standard library.
PROVIDED = ("numpy",)


def _asked(validated: ValidatedZip) -> list[tuple[str, str]]:
    """``(file, requirement)`` for every package the submission asks for (``RequirementsError``)."""
    asked = []
    text = read_package_file(validated, REQUIREMENTS_FILE, MAX_REQUIREMENTS_BYTES)
    if text is not None:
        asked += [(REQUIREMENTS_FILE, r) for r in parse_requirements(text)]
    text = read_package_file(validated, ENVIRONMENT_FILE, MAX_ENVIRONMENT_BYTES)
    if text is not None:
        asked += [(ENVIRONMENT_FILE, r) for r in parse_environment(text).requirements]
    return asked


def _name(requirement: str) -> str:
    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        return canonicalize_name(requirement)


def local_refusal(validated: ValidatedZip) -> tuple[str | None, list[str]]:
    """``(refusal, notes)``: why the local sandbox cannot run this submission as asked (a sentence for
    its owner naming what it cannot honour), or ``None``; ``notes`` say how what it can honour is (a
    numpy pin answered by the sandbox's numpy)."""
    language = validated.language
    if language is not None and language.key != "python":
        return (
            f"{language.label} agents ({language.entry_file}) are compiled and run only in the Docker "
            "sandbox, and this arena runs its agents in the local sandbox (SANDBOX=local), which runs "
            "Python agents only: upload a Python agent, or ask the arena's operator for the Docker sandbox",
            [],
        )
    try:
        asked = _asked(validated)
    except RequirementsError as exc:
        return str(exc), []
    refused = [(file, r) for file, r in asked if _name(r) not in PROVIDED]
    if refused:
        shown = "; ".join(
            f"{file}: {', '.join(r for f, r in refused if f == file)}"
            for file in dict.fromkeys(f for f, _ in refused)
        )
        return (
            f"this arena runs its agents in the local sandbox (SANDBOX=local), which cannot install "
            f"packages: it has Python's standard library and numpy only. Not available here: {shown}. "
            "Remove them from your agent (or vendor pure-Python code in the zip), or ask the arena's "
            "operator for the Docker sandbox",
            [],
        )
    notes = []
    for file, requirement in asked:
        try:
            installed = metadata.version(_name(requirement))
        except metadata.PackageNotFoundError:
            installed = "?"
        name = _name(requirement)
        notes.append(f"{file}: {requirement}: the local sandbox's own {name} {installed} is used")
    return None, notes
