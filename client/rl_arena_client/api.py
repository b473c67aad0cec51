"""Talking to an arena's JSON API: the saved configuration, a small HTTP client, multipart uploads.

Only the standard library (``urllib``). The token and server URL live in ``$RL_ARENA_CONFIG`` (default
``~/.config/rl-arena/config.json``, mode 0600); ``$RL_ARENA_SERVER`` and ``$RL_ARENA_TOKEN`` override it.
"""

from __future__ import annotations

import io
import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

DEFAULT_SERVER = "http://127.0.0.1:8000"
USER_AGENT = "rl-arena-client/1"


class CliError(Exception):
    """A failure to report to the user in one line (exit status 1); ``status`` is the server's HTTP
    status when it answered with an error."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def config_path() -> Path:
    """Where the token and server URL are stored."""
    override = os.environ.get("RL_ARENA_CONFIG")
    if override:
        return Path(override).expanduser()
    return Path.home() / ".config" / "rl-arena" / "config.json"


def load_config() -> dict[str, str]:
    """The saved configuration, with environment overrides applied."""
    path = config_path()
    data: dict[str, str] = {}
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise CliError(f"cannot read {path}: {exc}") from exc
    if os.environ.get("RL_ARENA_SERVER"):
        data["server"] = os.environ["RL_ARENA_SERVER"]
    if os.environ.get("RL_ARENA_TOKEN"):
        data["token"] = os.environ["RL_ARENA_TOKEN"]
    return data


def save_config(data: dict[str, str]) -> Path:
    """Write the configuration readable by the current user only."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
    os.chmod(path, 0o600)
    return path


class Client:
    """A tiny JSON-over-HTTP client for the arena API."""

    def __init__(self, server: str, token: str | None = None, timeout: float = 60.0) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout

    def url(self, path: str) -> str:
        """An absolute URL for ``path`` (which may already be absolute, e.g. a ``next`` link)."""
        return path if path.startswith(("http://", "https://")) else self.server + path

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> Any:
        """Send a request and decode the JSON answer; raises ``CliError`` with the server's message."""
        if json_body is not None:
            body = json.dumps(json_body).encode()
            content_type = "application/json"
        raw = self._send(method, path, body=body, content_type=content_type, accept="application/json")
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise CliError(f"{method} {self.url(path)} answered something that is not JSON") from None

    def fetch_bytes(self, path: str, accept: str) -> bytes:
        """``GET`` a file (e.g. a data folder's tar) as bytes; errors as :meth:`request`."""
        return self._send("GET", path, body=None, content_type=None, accept=accept)

    def _send(
        self, method: str, path: str, *, body: bytes | None, content_type: str | None, accept: str
    ) -> bytes:
        url = self.url(path)
        if not url.startswith(("http://", "https://")):
            raise CliError(f"server URL must start with http:// or https://, got {self.server!r}")
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        if content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=body, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                return resp.read()
        except urllib.error.HTTPError as exc:
            shown = urllib.parse.urlsplit(url).path
            message = f"{method} {shown} failed ({exc.code}): {error_text(exc.read())}"
            raise CliError(message, status=exc.code) from None
        except urllib.error.URLError as exc:
            raise CliError(f"cannot reach {self.server}: {exc.reason}") from None
        except (TimeoutError, ConnectionError) as exc:
            raise CliError(f"cannot reach {self.server}: {exc}") from None

    def pages(self, path: str) -> Any:
        """Every item of a paginated list endpoint (``{"results": [...], "next": url}``), page by page."""
        url: str | None = path
        while url:
            data = self.request("GET", url)
            if isinstance(data, list):
                yield from data
                return
            yield from data.get("results", [])
            url = data.get("next")


def error_text(raw: bytes) -> str:
    """The server's explanation from an error body (``detail``, or field errors), in one line."""
    try:
        data = json.loads(raw)
    except ValueError:
        text = raw.decode(errors="replace").strip()
        return text[:500] or "(no explanation)"
    if isinstance(data, dict):
        if "detail" in data:
            return str(data["detail"])
        return "; ".join(
            f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in data.items()
        )
    return str(data)


def encode_multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    """Encode form fields and files as ``multipart/form-data``; returns (body, content type)."""
    boundary = uuid.uuid4().hex
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode())
        out.write(str(value).encode() + b"\r\n")
    for name, (filename, data) in files.items():
        out.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/zip\r\n\r\n".encode()
        )
        out.write(data + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"
