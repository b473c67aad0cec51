"""Check, inside the agent image at build time, that requirements.txt is satisfied by what is installed.

Used when the operator has not enabled package installs (AGENT_ALLOW_PACKAGE_INSTALLS): a submission may
still ship a requirements.txt, as long as the base image already provides everything in it. Standard
library only (the base image has no ``packaging``). Exit 0 if satisfied, 1 with one line per problem.

Supported lines: ``name``, ``name==1.2``, ``name>=1.2,<2``, extras ``name[x]`` (ignored), environment
markers after ``;`` (ignored), comments and blank lines. Options (``-r``, ``--index-url``...), URLs and
local paths cannot be satisfied without installing, so they are reported.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")
_SPEC = re.compile(r"^\s*(===|==|!=|~=|>=|<=|>|<)\s*([A-Za-z0-9.*+!_-]+)\s*$")


def _version_key(text: str) -> tuple:
    parts = []
    for piece in re.split(r"[.+-]", text):
        match = re.match(r"^(\d+)(.*)$", piece)
        if match:
            parts.append((int(match.group(1)), match.group(2)))
        else:
            parts.append((-1, piece))
    while parts and parts[-1] == (0, ""):
        parts.pop()
    return tuple(parts)


def _satisfies(installed: str, op: str, wanted: str) -> bool:
    if op in ("==", "===") and wanted.endswith(".*"):
        prefix = wanted[:-2]
        return installed == prefix or installed.startswith(prefix + ".")
    if op == "!=" and wanted.endswith(".*"):
        return not _satisfies(installed, "==", wanted)
    have, want = _version_key(installed), _version_key(wanted)
    if op in ("==", "==="):
        return have == want
    if op == "!=":
        return have != want
    if op == ">=":
        return have >= want
    if op == "<=":
        return have <= want
    if op == ">":
        return have > want
    if op == "<":
        return have < want
    # ~=X.Y.Z means >=X.Y.Z and ==X.Y.*
    release = wanted.split(".")
    if len(release) < 2:
        return have >= want
    return have >= want and _satisfies(installed, "==", ".".join(release[:-1]) + ".*")


def check(lines: list[str]) -> list[str]:
    """Return one message per unsatisfied requirement line."""
    problems = []
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        shown = f"requirements.txt line {number} ({line[:80]!r})"
        if line.startswith("-") or "://" in line or line.startswith((".", "/")) or " @ " in line:
            problems.append(
                f"{shown}: options, URLs and local paths need package installs, which are disabled"
            )
            continue
        line = line.split(";", 1)[0].strip()
        match = _NAME.match(line)
        if not match:
            problems.append(f"{shown}: cannot be parsed")
            continue
        name, _extras, rest = match.groups()
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(
                f"{shown}: '{name}' is not installed in the base image, and this server does not install "
                "packages (the operator setting AGENT_ALLOW_PACKAGE_INSTALLS is off)"
            )
            continue
        for spec in filter(None, (s.strip() for s in rest.split(","))):
            spec_match = _SPEC.match(spec)
            if not spec_match:
                problems.append(f"{shown}: cannot parse the version condition {spec!r}")
                break
            op, wanted = spec_match.groups()
            if not _satisfies(installed, op, wanted):
                problems.append(
                    f"{shown}: the base image has {name} {installed}, which does not satisfy "
                    f"{op}{wanted}, and "
                    "this server does not install packages (AGENT_ALLOW_PACKAGE_INSTALLS is off)"
                )
                break
    return problems


def main(argv: list[str]) -> int:
    """Check the requirements file named by ``argv[1]``."""
    with open(argv[1], encoding="utf-8", errors="replace") as handle:
        problems = check(handle.read().splitlines())
    for problem in problems:
        print(f"REQUIREMENTS ERROR: {problem}", flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
