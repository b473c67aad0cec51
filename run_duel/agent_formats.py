"""Agent formats: which adapter the harness wraps an agent in, and how an upload's format is detected.

No dependencies beyond the standard library: the platform (``core``, ``web``), the CLIs and the light
client import it. The harness (``harness/arena_harness.py``, self-contained) receives the chosen format
as ``ARENA_AGENT_FORMAT`` and the game as ``ARENA_GAME`` (``LaunchSpec.agent_format``, ``game``).

- ``native``: our protocol's Player (``docs/PROTOCOL.md``); a module without a ``Player`` class is run as
  a Kaggle agent, as before.
- ``kaggle``: always the Kaggle adapter.
- ``rl-arena``: a Player written for the original rl-arena project (github school-of-ai-angers/rl-arena),
  given that project's states, valid actions and rewards (``RlArenaAdapter``); only in its three games.

Detection (``detect``): an agent is ``rl-arena`` when ``player.py`` and ``environment.yml`` (the conda
file every rl-arena submission had to carry; that project's builder required both) are at its root and
the game is one of rl-arena's; anything else is ``native``. Owners can override it at upload.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterable
from pathlib import Path

NATIVE = "native"
KAGGLE = "kaggle"
RL_ARENA = "rl-arena"
FORMATS = (NATIVE, KAGGLE, RL_ARENA)
#: What an owner may ask for at upload or on the command line: a format, or ``auto`` (detect it).
CHOICES = ("auto", *FORMATS)
#: Our slugs of the games the original rl-arena had (the harness's ``RL_ARENA_GAMES``).
RL_ARENA_GAMES = ("tic-tac-toe", "connect-four", "quarto")
#: The files whose presence side by side at an agent's root marks an rl-arena submission.
RL_ARENA_FILES = ("player.py", "environment.yml")

LABELS = {
    NATIVE: "native (this arena's Player)",
    KAGGLE: "Kaggle agent",
    RL_ARENA: "rl-arena (the original project's Player)",
}


def detect(files: Iterable[str], game: str) -> str:
    """The format of an agent whose root holds ``files`` (paths relative to the root, ``/``-separated),
    for ``game``."""
    names = set(files)
    if game in RL_ARENA_GAMES and all(name in names for name in RL_ARENA_FILES):
        return RL_ARENA
    return NATIVE


def root_files(path: str | Path) -> list[str]:
    """The file names at an agent's root: a folder's, or a zip's (with one single top-level folder
    stripped as the builder does when the entry file is inside it). Unreadable: an empty list."""
    path = Path(path)
    if path.is_dir():
        return [p.name for p in path.iterdir() if p.is_file()]
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if not n.endswith("/") and not n.startswith("__MACOSX/")]
    except (OSError, zipfile.BadZipFile):
        return []
    if "player.py" not in names:
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) == 1:
            (top,) = tops
            names = [n[len(top) + 1 :] for n in names if n.startswith(top + "/")]
    return [n for n in names if "/" not in n]


def resolve(choice: str, game: str, files: Iterable[str]) -> tuple[str, bool]:
    """``(format, detected)`` for an owner's ``choice`` (one of ``CHOICES``); raises ``ValueError`` with a
    message for the owner when the choice is unknown or cannot be used in ``game``."""
    choice = (choice or "auto").strip().lower()
    if choice not in CHOICES:
        raise ValueError(f"unknown agent format {choice!r}; choose one of: {', '.join(CHOICES)}")
    if choice == "auto":
        return detect(files, game), True
    why = problem(choice, game)
    if why:
        raise ValueError(why)
    return choice, False


def files_problem(agent_format: str, files: Iterable[str]) -> str:
    """Why an agent whose root holds ``files`` cannot run in ``agent_format`` (``""``: it can): the
    rl-arena format imports ``player.py``'s ``Player``, the Kaggle format a Python entry file."""
    names = set(files)
    if agent_format == RL_ARENA and "player.py" not in names:
        return "the rl-arena format runs the Player class of player.py, and this agent has no player.py"
    if agent_format == KAGGLE and not names & {"player.py", "main.py", "submission.py"}:
        return "the Kaggle format runs a Python function, and this agent has no main.py (nor player.py)"
    return ""


def problem(agent_format: str, game: str) -> str:
    """Why ``agent_format`` cannot run in ``game`` (``""``: it can)."""
    if agent_format not in FORMATS:
        return f"unknown agent format {agent_format!r}; choose one of: {', '.join(FORMATS)}"
    if agent_format == RL_ARENA and game not in RL_ARENA_GAMES:
        return (
            f"the rl-arena format exists for {', '.join(RL_ARENA_GAMES)} (the original rl-arena's games), "
            f"not {game}"
        )
    return ""
