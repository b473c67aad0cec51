"""Environment variables for ``core.settings``: the parser of ``envsettings``, raising Django's error.

Every helper is ``envsettings``'s (one parser for the whole project: it reads one variable, converts it,
and names the variable and the value when it cannot be used), with ``SettingsError`` turned into
``ImproperlyConfigured``. Secrets also accept a ``<NAME>_FILE`` variant that points to a file holding the
value (Docker/Kubernetes secrets); setting both is an error.

A ``.env`` file at the repository root (or at ``$ENV_FILE``) is read first, if present; variables already
set in the process environment win over it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ParamSpec, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

import envsettings

P = ParamSpec("P")
R = TypeVar("R")


def _django(parse: Callable[P, R]) -> Callable[P, R]:
    """``parse`` raising ``ImproperlyConfigured`` instead of ``SettingsError`` (same message)."""

    @functools.wraps(parse)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return parse(*args, **kwargs)
        except envsettings.SettingsError as exc:
            raise ImproperlyConfigured(str(exc)) from exc.__cause__

    return wrapper


load_env_file = _django(envsettings.load_env_file)
env_required = _django(envsettings.env_required)
env_bool = _django(envsettings.env_bool)
env_int = _django(envsettings.env_int)
env_float = _django(envsettings.env_float)
env_json_object = _django(envsettings.env_json_object)
env_rate_limits = _django(envsettings.env_rate_limits)
env_list = _django(envsettings.env_list)
env_choice = _django(envsettings.env_choice)
env_path = _django(envsettings.env_path)


def env_str(name: str, default: str | None = None) -> str | None:
    """The raw string value of ``name`` (``default`` if unset)."""
    return os.environ.get(name, default)


def env_secret(name: str) -> str | None:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (trailing newline stripped); ``None``
    when neither is set."""
    return _django(envsettings.env_secret)(name) or None


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
