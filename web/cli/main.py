"""``rl-arena`` command-line client: log in, submit an agent folder, follow its build and test.

Only the standard library is used (``urllib``), so the client installs anywhere Python runs::

    rl-arena login --server https://arena.example.org
    rl-arena submit connect-four my-bot ./my_agent --public
    rl-arena status
    rl-arena status 42

The token and server URL are kept in ``$RL_ARENA_CONFIG`` (default ``~/.config/rl-arena/config.json``,
mode 0600). ``$RL_ARENA_SERVER`` and ``$RL_ARENA_TOKEN`` override the file.
"""

from __future__ import annotations

import argparse
import getpass
import io
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zipfile
from pathlib import Path
from typing import Any, TextIO

DEFAULT_SERVER = "http://127.0.0.1:8000"
#: Revision states in the order a healthy submission goes through them.
PROGRESS_STATES = ["UPLOADED", "BUILDING", "BUILT", "TESTING", "ELIGIBLE"]
FAILED_STATES = {"BUILD_FAILED", "TEST_FAILED", "REJECTED"}
SKIPPED_NAMES = {"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", ".mypy_cache", ".pytest_cache"}


class CliError(Exception):
    """A failure to report to the user in one line (exit status 1)."""


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
    return path


class Client:
    """A tiny JSON-over-HTTP client for the arena API."""

    def __init__(self, server: str, token: str | None = None, timeout: float = 60.0) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout

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
        url = self.server + path
        if not url.startswith(("http://", "https://")):
            raise CliError(f"server URL must start with http:// or https://, got {self.server!r}")
        headers = {"Accept": "application/json", "User-Agent": "rl-arena-cli/1"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        if json_body is not None:
            body = json.dumps(json_body).encode()
            content_type = "application/json"
        if content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(url, data=body, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise CliError(f"{method} {path} failed ({exc.code}): {_error_text(exc.read())}") from None
        except urllib.error.URLError as exc:
            raise CliError(f"cannot reach {self.server}: {exc.reason}") from None
        return json.loads(raw) if raw else None


def _error_text(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")[:500]
    if isinstance(data, dict):
        if "detail" in data:
            return str(data["detail"])
        return "; ".join(
            f"{k}: {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in data.items()
        )
    return str(data)


def zip_folder(folder: Path) -> bytes:
    """Zip ``folder``'s contents (paths relative to it), skipping caches and VCS folders."""
    folder = folder.resolve()
    if not folder.is_dir():
        raise CliError(f"{folder} is not a folder")
    if not (folder / "player.py").is_file():
        raise CliError(f"{folder} has no player.py (an agent folder must hold player.py at its top)")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            if any(part in SKIPPED_NAMES for part in rel.parts) or path.suffix == ".pyc":
                continue
            if path.is_file():
                zf.write(path, rel.as_posix())
    return buf.getvalue()


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


def progress_bar(state: str, width: int = 30) -> str:
    """A one-line bar for a revision state, e.g. ``[##########----------] BUILDING``."""
    if state in FAILED_STATES:
        return f"[{'!' * width}] {state}"
    step = PROGRESS_STATES.index(state) if state in PROGRESS_STATES else 0
    filled = round(width * step / (len(PROGRESS_STATES) - 1))
    return f"[{'#' * filled}{'-' * (width - filled)}] {state}"


def _client(args: argparse.Namespace, need_token: bool = True) -> Client:
    cfg = load_config()
    server = args.server or cfg.get("server") or DEFAULT_SERVER
    token = cfg.get("token")
    if need_token and not token:
        raise CliError("not logged in: run `rl-arena login` first (or set RL_ARENA_TOKEN)")
    return Client(server, token)


def cmd_login(args: argparse.Namespace, out: TextIO) -> int:
    """Exchange email and password for an API token and save it."""
    client = _client(args, need_token=False)
    email = args.email or input("Email: ")
    password = os.environ.get("RL_ARENA_PASSWORD") or getpass.getpass("Password: ")
    data = client.request("POST", "/api/auth/token/", json_body={"email": email, "password": password})
    path = save_config({"server": client.server, "token": data["token"]})
    print(f"Logged in to {client.server} as {email}; token saved in {path}", file=out)
    return 0


def wait_for_revision(client: Client, revision_id: int, out: TextIO, poll: float, timeout: float) -> dict:
    """Poll a revision until it is eligible or failed, drawing a progress bar; returns its last JSON."""
    deadline = time.monotonic() + timeout
    last_line = ""
    tty = out.isatty()
    while True:
        rev = client.request("GET", f"/api/revisions/{revision_id}/")
        line = progress_bar(rev["state"])
        if line != last_line:
            print(("\r" if tty else "") + line, end="" if tty else "\n", file=out, flush=True)
            last_line = line
        if rev["state"] == "ELIGIBLE" or rev["state"] in FAILED_STATES:
            if tty:
                print(file=out)
            return rev
        if time.monotonic() > deadline:
            if tty:
                print(file=out)
            raise CliError(f"gave up waiting after {timeout:.0f}s; revision {revision_id} is {rev['state']}")
        time.sleep(poll)


def cmd_submit(args: argparse.Namespace, out: TextIO) -> int:
    """Zip an agent folder, upload it as a new revision and follow it until ranked or failed."""
    client = _client(args)
    archive = zip_folder(Path(args.folder))
    body, ctype = encode_multipart(
        {
            "environment": args.game,
            "competitor_name": args.name,
            "is_public": "true" if args.public else "false",
        },
        {"file": (f"{args.name}.zip", archive)},
    )
    rev = client.request("POST", "/api/revisions/", body=body, content_type=ctype)
    print(
        f"Uploaded {len(archive)} bytes: {args.name} revision {rev.get('version')} (id {rev['id']})",
        file=out,
    )
    if args.no_wait:
        return 0
    final = wait_for_revision(client, rev["id"], out, args.poll, args.timeout)
    if final["state"] == "ELIGIBLE":
        print(f"Ranked: {final.get('url') or ''}".rstrip(), file=out)
        return 0
    print(f"Failed: {final.get('failure') or final['state']}", file=out)
    if final.get("url"):
        print(f"Logs: {final['url']}", file=out)
    return 1


def cmd_status(args: argparse.Namespace, out: TextIO) -> int:
    """Show one revision, or all of my competitors with their latest revision's state."""
    client = _client(args)
    if args.revision:
        rev = client.request("GET", f"/api/revisions/{args.revision}/")
        print(f"revision {rev['id']} (v{rev.get('version')}): {progress_bar(rev['state'])}", file=out)
        if rev.get("failure"):
            print(f"  {rev['failure']}", file=out)
        return 0
    data = client.request("GET", "/api/competitors/?mine=1")
    rows = data.get("results", data) if isinstance(data, dict) else data
    if not rows:
        print("You have no competitors yet: `rl-arena submit GAME NAME ./folder`", file=out)
        return 0
    for comp in rows:
        latest = comp.get("latest_revision") or {}
        rating = comp.get("rating") or {}
        score = rating.get("conservative")
        score_text = f"{score:.2f}" if isinstance(score, int | float) else "-"
        print(
            f"{comp['environment']:<14} {comp['name']:<24} v{latest.get('version', '-')!s:<4} "
            f"{latest.get('state', '-'):<13} skill {score_text}",
            file=out,
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for ``rl-arena``."""
    parser = argparse.ArgumentParser(prog="rl-arena", description="Command-line client for RL Arena.")
    parser.add_argument("--server", help=f"arena URL (default: saved, $RL_ARENA_SERVER or {DEFAULT_SERVER})")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("login", help="log in and save an API token")
    p.add_argument("--email")
    p.set_defaults(func=cmd_login)
    p = sub.add_parser("submit", help="zip a folder and upload it as a new revision")
    p.add_argument("game", help="game slug, e.g. connect-four")
    p.add_argument("name", help="competitor name (created on first upload)")
    p.add_argument("folder", help="folder holding player.py")
    p.add_argument("--public", action="store_true", help="publish the source (default: private)")
    p.add_argument("--no-wait", action="store_true", help="do not follow the build and smoke test")
    p.add_argument("--poll", type=float, default=2.0, help="seconds between status checks")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait at most")
    p.set_defaults(func=cmd_submit)
    p = sub.add_parser("status", help="show your competitors, or one revision")
    p.add_argument("revision", nargs="?", type=int, help="revision id")
    p.set_defaults(func=cmd_status)
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point of the ``rl-arena`` console script."""
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    try:
        return args.func(args, out)
    except CliError as exc:
        print(f"rl-arena: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
