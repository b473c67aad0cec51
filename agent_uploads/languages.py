"""The languages an agent may be written in, and how a submission declares its language: its entry file.

| entry file | language | what runs |
|---|---|---|
| ``player.py`` | Python | our harness imports it and builds its ``Player`` class |
| ``main.py`` | Python | a Kaggle agent: the file's last function, as Kaggle runs it (or a ``Player``) |
| ``submission.py`` | Python | the same, under the name Kaggle notebooks write their submission to |
| ``main.cpp`` | C++ | compiled with the other ``.cpp`` files at build time against ``arena.hpp`` |
| ``main.js`` | JavaScript | our Node.js harness ``require``s it and builds the ``Player`` it exports |

The first entry file found in that order decides (a zip holding ``player.py`` and ``main.cpp`` is a Python
agent). Standard library only: the web pages import this too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    """One supported agent language."""

    key: str  # "python" | "cpp" | "javascript": stable, stored and used in settings
    label: str  # what people read
    entry_file: str


PYTHON = Language("python", "Python", "player.py")
PYTHON_KAGGLE = Language("python", "Python", "main.py")
PYTHON_KAGGLE_SUBMISSION = Language("python", "Python", "submission.py")
CPP = Language("cpp", "C++", "main.cpp")
JAVASCRIPT = Language("javascript", "JavaScript", "main.js")

#: In the order they are looked for.
_BY_ENTRY = (PYTHON, PYTHON_KAGGLE, PYTHON_KAGGLE_SUBMISSION, CPP, JAVASCRIPT)
ENTRY_FILES: tuple[str, ...] = tuple(language.entry_file for language in _BY_ENTRY)
LANGUAGE_KEYS: tuple[str, ...] = ("python", "cpp", "javascript")


def detect_language(names: Iterable[str]) -> Language | None:
    """The language declared by the entry file among ``names`` (paths relative to the agent's folder), or
    ``None`` when there is none."""
    present = set(names)
    for language in _BY_ENTRY:
        if language.entry_file in present:
            return language
    return None


def describe(language: Language) -> str:
    """One sentence for the uploader, e.g. ``C++ agent (main.cpp, compiled at build time)``."""
    how = {
        "player.py": "its Player class is imported by our Python harness",
        "main.py": "a Kaggle agent, the file's last function (or a Player class), run by our Python harness",
        "submission.py": "a Kaggle agent, the file's last function (or a Player class), run by our Python "
        "harness",
        "main.cpp": "compiled at build time with g++ (C++17) against arena.hpp",
        "main.js": "run by our Node.js harness",
    }[language.entry_file]
    return f"{language.label} agent ({language.entry_file}: {how})"
