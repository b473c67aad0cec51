"""Discovery of the games in ``environments/`` and parsing of their ``info.yml``.

A game is any sub-folder of ``environments/`` holding both an ``info.yml`` and a ``rules.py`` whose
module-level ``GAME`` is a :class:`~environments.base.Game`. Adding a folder is enough to register a game:
nothing here lists games by name.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import threading
from pathlib import Path
from typing import Any

from environments.base import Game, GameInfo

ENVIRONMENTS_DIR = Path(__file__).resolve().parent
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class UnknownGameError(KeyError):
    """Raised when a slug names no registered game. The message lists the known slugs."""

    def __str__(self) -> str:  # KeyError would repr() the message, quotes and all
        return str(self.args[0]) if self.args else ""


class InvalidGameInfoError(ValueError):
    """Raised when an ``info.yml`` is missing, unparsable or has invalid values."""


class GameRegistryError(RuntimeError):
    """Raised when a game folder is malformed (no ``GAME``, slug mismatch, import error...)."""


def _positive_even_int(value: Any) -> str | None:
    if type(value) is not int or value <= 0 or value % 2:
        return f"must be an even integer > 0, got {value!r}"
    return None


def _positive_int(value: Any) -> str | None:
    if type(value) is not int or value <= 0:
        return f"must be an integer > 0, got {value!r}"
    return None


def _positive_number(value: Any) -> str | None:
    if type(value) not in (int, float) or not value > 0 or value == float("inf"):
        return f"must be a finite number > 0, got {value!r}"
    return None


def _non_negative_number(value: Any) -> str | None:
    if type(value) not in (int, float) or not value >= 0 or value == float("inf"):
        return f"must be a finite number >= 0, got {value!r}"
    return None


def _non_empty_str(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return f"must be a non-empty string, got {value!r}"
    return None


def _slug(value: Any) -> str | None:
    if not isinstance(value, str) or not SLUG_RE.match(value):
        return (
            f"must be lowercase letters/digits joined by single hyphens (e.g. 'connect-four'), got {value!r}"
        )
    return None


_FIELD_CHECKS = {
    "slug": _slug,
    "name": _non_empty_str,
    "description": _non_empty_str,
    "matches_per_duel": _positive_even_int,
    "move_time_limit": _positive_number,
    "init_time_limit": _positive_number,
    "memory_limit_mb": _positive_int,
    "cpu_limit": _positive_number,
    "smoke_test_matches": _positive_even_int,
}

#: Keys an ``info.yml`` may leave out (``data_mb``: the agents' data folder size, run_duel/agent_data.py;
#: ``time_bank_s``: each agent's time bank per match, run_duel/seat.py).
_OPTIONAL_CHECKS = {"data_mb": _positive_int, "time_bank_s": _non_negative_number}


def parse_info(data: Any, source: str = "info.yml") -> GameInfo:
    """Validate the parsed content of an ``info.yml`` and build a :class:`GameInfo`.

    Every problem is reported at once, prefixed by ``source``. Unknown keys are kept in ``extra``.
    """
    if not isinstance(data, dict):
        raise InvalidGameInfoError(f"{source}: must be a YAML mapping, got {type(data).__name__}")
    problems = []
    for key, check in _FIELD_CHECKS.items():
        if key not in data:
            problems.append(f"missing required key {key!r}")
            continue
        problem = check(data[key])
        if problem:
            problems.append(f"{key} {problem}")
    for key, check in _OPTIONAL_CHECKS.items():
        problem = check(data[key]) if key in data else None
        if problem:
            problems.append(f"{key} {problem}")
    if problems:
        raise InvalidGameInfoError(f"{source}: " + "; ".join(problems))
    extra = {k: v for k, v in data.items() if k not in _FIELD_CHECKS and k not in _OPTIONAL_CHECKS}
    return GameInfo(
        slug=data["slug"],
        name=data["name"].strip(),
        description=data["description"],
        matches_per_duel=data["matches_per_duel"],
        move_time_limit=float(data["move_time_limit"]),
        init_time_limit=float(data["init_time_limit"]),
        memory_limit_mb=data["memory_limit_mb"],
        cpu_limit=float(data["cpu_limit"]),
        smoke_test_matches=data["smoke_test_matches"],
        extra=extra,
        data_mb=data.get("data_mb"),
        time_bank_s=float(data.get("time_bank_s", 0)),
    )


def load_info(path: Path) -> GameInfo:
    """Read and validate one ``info.yml`` file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidGameInfoError(f"{path}: cannot read: {exc}") from exc
    import yaml  # here, not at import: ``import environments`` stays light

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidGameInfoError(f"{path}: invalid YAML: {exc}") from exc
    return parse_info(data, source=str(path))


@dataclasses.dataclass(frozen=True)
class GameEntry:
    """A discovered game: its rules object, its validated ``info.yml`` and its folder."""

    game: Game
    info: GameInfo
    folder: Path


def load_game_folder(folder: Path, package: str) -> GameEntry:
    """Import ``<package>.<folder name>.rules`` and check it against ``folder/info.yml``."""
    info = load_info(folder / "info.yml")
    module_name = f"{package}.{folder.name}.rules"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise GameRegistryError(f"{folder}: cannot import {module_name}: {exc}") from exc
    game = getattr(module, "GAME", None)
    if not isinstance(game, Game):
        raise GameRegistryError(f"{folder / 'rules.py'}: must define a module-level GAME (a Game instance)")
    if game.slug != info.slug:
        raise GameRegistryError(f"{folder}: GAME.slug is {game.slug!r} but info.yml says {info.slug!r}")
    if folder.name != info.slug.replace("-", "_"):
        raise GameRegistryError(
            f"{folder}: folder name must be the slug with underscores ({info.slug.replace('-', '_')!r})"
        )
    if type(game.num_actions) is not int or game.num_actions <= 0:
        raise GameRegistryError(f"{folder}: GAME.num_actions must be a positive int")
    return GameEntry(game=game, info=info, folder=folder)


def discover_games(directory: Path, package: str) -> dict[str, GameEntry]:
    """Every game folder directly under ``directory`` (the importable package ``package``), by slug.

    A game folder holds both ``info.yml`` and ``rules.py``; other folders are ignored. A malformed game
    folder raises ``GameRegistryError`` or ``InvalidGameInfoError`` rather than being skipped silently.
    """
    found: dict[str, GameEntry] = {}
    for folder in sorted(Path(directory).iterdir()):
        if folder.name.startswith((".", "_")) or not folder.is_dir():
            continue
        if not ((folder / "info.yml").is_file() and (folder / "rules.py").is_file()):
            continue
        entry = load_game_folder(folder, package)
        found[entry.info.slug] = entry
    return found


_lock = threading.Lock()
_entries: dict[str, GameEntry] | None = None


def _discover() -> dict[str, GameEntry]:
    global _entries
    if _entries is None:
        with _lock:
            if _entries is None:
                _entries = discover_games(ENVIRONMENTS_DIR, __package__)
    return _entries


def _entry(slug: str) -> GameEntry:
    entries = _discover()
    try:
        return entries[slug]
    except (KeyError, TypeError):
        known = ", ".join(sorted(entries)) or "(none)"
        raise UnknownGameError(f"unknown game {slug!r}; known games: {known}") from None


def all_slugs() -> list[str]:
    """Slugs of every registered game, sorted."""
    return sorted(_discover())


def get_game(slug: str) -> Game:
    """The rules object of the game ``slug`` (e.g. ``"connect-four"``)."""
    return _entry(slug).game


def get_info(slug: str) -> GameInfo:
    """The validated ``info.yml`` of the game ``slug`` (a fresh object: callers may keep it)."""
    info = _entry(slug).info
    return dataclasses.replace(info, extra=dict(info.extra))


def static_dir(slug: str) -> Path:
    """Folder with the game's browser files (``renderer.js``, ``sample_states.json``)."""
    return _entry(slug).folder / "static"
