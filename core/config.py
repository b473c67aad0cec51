"""Typed, loud parsing of environment variables for ``core.settings``.

Every helper reads one variable, converts it, and raises ``ImproperlyConfigured`` naming the variable
when the value cannot be used. Secrets also accept a ``<NAME>_FILE`` variant that points to a file holding
the value (Docker/Kubernetes secrets); setting both is an error.

A ``.env`` file at the repository root (or at ``$ENV_FILE``) is read first, if present; variables already
set in the process environment win over it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


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
            raise ImproperlyConfigured(f"{path}:{lineno}: expected KEY=VALUE, got {raw!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        os.environ.setdefault(key, value)


def env_str(name: str, default: str | None = None) -> str | None:
    """The raw string value of ``name`` (``default`` if unset)."""
    return os.environ.get(name, default)


def env_required(name: str) -> str:
    """The value of ``name``; raises if it is unset or empty."""
    value = os.environ.get(name, "")
    if not value.strip():
        raise ImproperlyConfigured(f"environment variable {name} is required")
    return value


def env_bool(name: str, default: bool) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (case-insensitive)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer, optionally bounded."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        value = default
    else:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} must be <= {maximum}")
    return value


def env_float(
    name: str, default: float, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """A finite float, optionally bounded."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        value = default
    else:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ImproperlyConfigured(f"{name}={raw!r} must be a finite number")
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} must be <= {maximum}")
    return value


def env_json_object(name: str, default: dict[str, Any]) -> dict[str, Any]:
    """A JSON object (``{"beta": 2.5}``); empty or unset gives ``default``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return dict(default)
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f'{name}={raw!r} must be a JSON object like {{"beta": 2.5}}')
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
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not scope=hits/seconds (e.g. login=10/300; 0 hits: no limit)"
            )
        limits[scope.strip()] = parsed
    return limits


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blanks are dropped."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (case-insensitive)."""
    raw = os.environ.get(name)
    value = default if raw is None or raw.strip() == "" else raw.strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={raw!r} must be one of: {', '.join(choices)}")
    return value


def env_path(name: str, default: Path) -> Path:
    """An absolute path (relative values are resolved against the current directory)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return Path(raw.strip()).expanduser().resolve()


def env_secret(name: str) -> str | None:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (trailing newline stripped)."""
    direct = os.environ.get(name)
    file_var = f"{name}_FILE"
    file_name = os.environ.get(file_var)
    if direct and file_name:
        raise ImproperlyConfigured(f"set either {name} or {file_var}, not both")
    if file_name:
        try:
            return Path(file_name).read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise ImproperlyConfigured(f"{file_var}={file_name!r} cannot be read: {exc}") from exc
    return direct or None


@dataclass(frozen=True)
class DatabaseUrl:
    """A parsed ``DATABASE_URL``."""

    engine: str
    name: str
    user: str = ""
    password: str = ""
    host: str = ""
    port: str = ""
    options: dict[str, str] | None = None


def parse_database_url(url: str, *, var: str = "DATABASE_URL", base_dir: Path | None = None) -> DatabaseUrl:
    """Parse ``postgres://user:pass@host:port/name?opt=v`` or ``sqlite:///abs/path`` / ``sqlite:///rel``.

    ``sqlite:////abs/path`` (four slashes) is absolute; ``sqlite:///rel/path`` is relative to ``base_dir``.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("postgres", "postgresql", "pgsql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured(f"{var}: missing database name in {url!r}")
        try:
            port = str(parts.port or "")
        except ValueError:
            raise ImproperlyConfigured(f"{var}: bad port in {url!r}") from None
        return DatabaseUrl(
            engine="django.db.backends.postgresql",
            name=name,
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            host=unquote(parts.hostname or ""),
            port=port,
            options=dict(parse_qsl(parts.query)),
        )
    if scheme == "sqlite":
        path = unquote(parts.path)
        if path in ("", "/"):
            raise ImproperlyConfigured(f"{var}: missing file name in {url!r}")
        if path.startswith("//"):
            name = path[1:]
        else:
            rel = path.lstrip("/")
            name = rel if rel == ":memory:" else str((base_dir or Path.cwd()) / rel)
        return DatabaseUrl(engine="django.db.backends.sqlite3", name=name)
    raise ImproperlyConfigured(f"{var}: unsupported scheme {parts.scheme!r} (use postgres:// or sqlite:///)")
