"""The one parser of environment variables: typed, loud, dependency-free (stdlib only).

Every helper reads one variable, converts it, and raises ``SettingsError`` naming the variable and the
value when it cannot be used: a typo (``DUEL_CPU_PINNING=of``) stops the process at start-up instead of
silently meaning the default. Secrets also accept a ``<NAME>_FILE`` variant that points to a file holding
the value (Docker/Kubernetes secrets); setting both is an error.

Each library builds its settings once, as a frozen dataclass, with these helpers (``run_duel.settings``,
``builder.settings``, ``autoscaler.settings``); ``core.settings`` uses them through ``core.config``, which
turns ``SettingsError`` into Django's ``ImproperlyConfigured``. ``once_per_environment`` builds such an
object once per distinct value of its variables (so a test that changes one gets a fresh object).
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

T = TypeVar("T")
N = TypeVar("N", int, float)


class SettingsError(ValueError):
    """An environment variable holds a value that cannot be used (the message names both)."""


def load_env_file(path: Path) -> None:
    """Put ``KEY=VALUE`` lines of ``path`` into ``os.environ`` unless already set. Missing file: no-op."""
    if not path.is_file():
        return
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise SettingsError(f"{path}:{lineno}: expected KEY=VALUE, got {raw!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        os.environ.setdefault(key, value)


def env_str(name: str, default: str = "") -> str:
    """The value of ``name`` without surrounding blanks; ``default`` when unset or blank."""
    return os.environ.get(name, "").strip() or default


def env_required(name: str) -> str:
    """The value of ``name``; raises if it is unset or empty."""
    value = os.environ.get(name, "")
    if not value.strip():
        raise SettingsError(f"environment variable {name} is required")
    return value


def env_bool(name: str, default: bool) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (case-insensitive); unset: ``default``."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SettingsError(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def _bounded(name: str, value: N, minimum: N | None, maximum: N | None) -> N:
    if minimum is not None and value < minimum:
        raise SettingsError(f"{name}={value} must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise SettingsError(f"{name}={value} must be <= {maximum}")
    return value


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer, optionally bounded; unset or blank: ``default``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return _bounded(name, default, minimum, maximum)
    try:
        value = int(raw.strip())
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not an integer") from None
    return _bounded(name, value, minimum, maximum)


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """A finite float, optionally bounded; unset or blank: ``default``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return _bounded(name, default, minimum, maximum)
    try:
        value = float(raw.strip())
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number") from None
    if not math.isfinite(value):
        raise SettingsError(f"{name}={raw!r} must be a finite number")
    return _bounded(name, value, minimum, maximum)


def env_url(name: str, default: str = "") -> str:
    """An ``http://`` or ``https://`` URL; unset or blank: ``default``."""
    value = env_str(name, default)
    if value and not value.startswith(("http://", "https://")):
        raise SettingsError(f"{name}={value!r} must be an http:// or https:// URL")
    return value


def env_json_object(name: str, default: dict[str, Any]) -> dict[str, Any]:
    """A JSON object (``{"beta": 2.5}``); empty or unset gives ``default``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return dict(default)
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise SettingsError(f"{name}={raw!r} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise SettingsError(f'{name}={raw!r} must be a JSON object like {{"beta": 2.5}}')
    return value


def env_rate_limits(name: str) -> dict[str, tuple[int, int]]:
    """``scope=hits/seconds`` pairs, comma-separated (``login=10/300,upload=20/3600``); unset: ``{}``."""
    raw = os.environ.get(name, "")
    limits: dict[str, tuple[int, int]] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        scope, _, spec = item.partition("=")
        hits, _, seconds = spec.partition("/")
        try:
            parsed = (int(hits), int(seconds))
        except ValueError:
            parsed = (-1, 0)
        if not scope.strip() or parsed[0] < 0 or parsed[1] < 1:
            raise SettingsError(
                f"{name}: {item!r} is not scope=hits/seconds (e.g. login=10/300; 0 hits: no limit)"
            )
        limits[scope.strip()] = parsed
    return limits


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blanks are dropped; unset: ``default``."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (case-insensitive); unset or blank: ``default``."""
    raw = os.environ.get(name)
    value = default if raw is None or raw.strip() == "" else raw.strip().lower()
    if value not in choices:
        raise SettingsError(f"{name}={raw!r} must be one of: {', '.join(choices)}")
    return value


def env_path(name: str, default: Path) -> Path:
    """An absolute path (relative values are resolved against the current directory); unset: ``default``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return Path(raw.strip()).expanduser().resolve()


def env_secret(name: str) -> str:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (trailing newline stripped); ``""``
    when neither is set."""
    direct = os.environ.get(name, "")
    file_var = f"{name}_FILE"
    file_name = os.environ.get(file_var, "").strip()
    if direct and file_name:
        raise SettingsError(f"set either {name} or {file_var}, not both")
    if file_name:
        try:
            return Path(file_name).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise SettingsError(f"{file_var}={file_name!r} cannot be read: {exc}") from exc
    return direct


def once_per_environment(names: Iterable[str]) -> Callable[[Callable[[], T]], Callable[[], T]]:
    """Decorate a settings builder so it runs once per distinct value of the variables ``names`` (and of
    their ``_FILE`` variants): a process builds its settings once; a test that sets a variable gets them
    built again from the new value."""
    watched = tuple(dict.fromkeys(part for name in names for part in (name, f"{name}_FILE")))

    def decorate(build: Callable[[], T]) -> Callable[[], T]:
        @functools.lru_cache(maxsize=8)
        def cached(_values: tuple[str | None, ...]) -> T:
            return build()

        @functools.wraps(build)
        def current() -> T:
            return cached(tuple(os.environ.get(name) for name in watched))

        return current

    return decorate
