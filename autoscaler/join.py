"""Worker machines join the main one: one-time join tickets, the join service and the worker's fetch.

Why: a worker droplet's user-data is readable by anything on the droplet that reaches the cloud metadata
service (http://169.254.169.254), including an agent build with network. So user-data carries no database
or Redis password and no SECRET_KEY: only a **join ticket**. At boot the worker presents it to the join
service on the main droplet (private network only) and receives its settings:

- a **PostgreSQL role of its own** (``worker_<name>``, member of ``rl_arena_workers``: SELECT, INSERT,
  UPDATE, DELETE on the tables, no DDL, no superuser), created at join and dropped when the autoscaler
  destroys the droplet (``revoke``), so a leaked worker credential dies with its worker;
- the Redis URL (Redis has one password: per-user ACLs would be lost on every Redis restart, see
  docs/DEPLOYMENT.md), the registry address and credentials (``AGENT_REGISTRY*``), and the registry's CA.

A ticket is ``<name>.<nonce>.<mac>`` with ``mac = sha256(key ":" sha256(key ":" name ":" nonce))``
(terraform has ``sha256`` but no HMAC; the outer hash makes it immune to length extension). It is
**spent on first use**: a file named ``<name>.<nonce>`` created with ``O_EXCL`` in the spent folder, so two
concurrent joins with one ticket cannot both succeed, and a ticket read later (from the metadata service,
a log, the DigitalOcean API) is worthless. Terraform mints its workers' tickets from ``join_key``; the
autoscaler mints one per droplet it creates.

Standard library only: the join service runs on the main droplet's host with the system ``python3``, and
``fetch`` runs on a worker before any virtualenv exists.

    python3 -m autoscaler.join serve --bind 10.42.0.5:8471 --key-file K --spent-dir D --env-file E \\
        --database-host 10.42.0.5 --psql "docker compose exec -T db psql -U arena -d arena" [--registry-ca CA]
    python3 -m autoscaler.join fetch --main http://10.42.0.5:8471 --ticket-file T --base-env B --out ENV
    python3 -m autoscaler.join mint --key-file K NAME        # a ticket for a worker added by hand
    python3 -m autoscaler.join revoke --psql "..." NAME      # drop a worker's database role
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

log = logging.getLogger("autoscaler.join")

#: Worker names: DigitalOcean droplet names as the platform makes them (also the Celery host name).
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,49}$")
NONCE_RE = re.compile(r"^[0-9a-f]{16,64}$")
MAC_RE = re.compile(r"^[0-9a-f]{64}$")
#: Group role holding the workers' table privileges; each worker logs in as a member of it.
WORKERS_GROUP = "rl_arena_workers"
DEFAULT_PORT = 8471


class TicketError(ValueError):
    """A join ticket that is malformed or not signed with the join key."""


class JoinRefused(RuntimeError):
    """The join service refused the ticket for good (bad, spent): retrying cannot help."""


# --- tickets ------------------------------------------------------------------------------------------------
def ticket_mac(key: str, name: str, nonce: str) -> str:
    """``sha256(key ":" sha256(key ":" name ":" nonce))`` in hex (the same expression as terraform's)."""
    inner = hashlib.sha256(f"{key}:{name}:{nonce}".encode()).hexdigest()
    return hashlib.sha256(f"{key}:{inner}".encode()).hexdigest()


def make_ticket(key: str, name: str, nonce: str | None = None) -> str:
    """A ticket letting worker ``name`` join once."""
    if not key:
        raise ValueError("the join key is empty")
    if not NAME_RE.match(name):
        raise ValueError(f"worker name {name!r} must match {NAME_RE.pattern}")
    nonce = nonce or secrets.token_hex(16)
    if not NONCE_RE.match(nonce):
        raise ValueError(f"nonce {nonce!r} must be 16-64 lowercase hex digits")
    return f"{name}.{nonce}.{ticket_mac(key, name, nonce)}"


def check_ticket(key: str, ticket: str) -> tuple[str, str]:
    """``(name, nonce)`` of a ticket signed with ``key``; TicketError otherwise."""
    parts = ticket.strip().split(".")
    if len(parts) != 3:
        raise TicketError("a join ticket is <name>.<nonce>.<mac>")
    name, nonce, mac = parts
    if not (NAME_RE.match(name) and NONCE_RE.match(nonce) and MAC_RE.match(mac)):
        raise TicketError("malformed join ticket")
    if not hmac.compare_digest(mac, ticket_mac(key, name, nonce)):
        raise TicketError("join ticket not signed with this deployment's join key")
    return name, nonce


class SpentTickets:
    """Tickets already used, one empty file each: claiming is atomic (``O_CREAT | O_EXCL``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _path(self, name: str, nonce: str) -> Path:
        return self.folder / f"{name}.{nonce}"

    def claim(self, name: str, nonce: str) -> bool:
        """True the first time only."""
        try:
            fd = os.open(self._path(name, nonce), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        os.write(fd, f"{time.time():.0f}\n".encode())
        os.close(fd)
        return True

    def release(self, name: str, nonce: str) -> None:
        """Un-spend a ticket whose join failed on our side (the worker retries with it)."""
        self._path(name, nonce).unlink(missing_ok=True)


# --- per-worker database roles ------------------------------------------------------------------------------
def worker_role(name: str) -> str:
    """The PostgreSQL role of worker ``name`` (``worker_`` + the name, dashes as underscores)."""
    if not NAME_RE.match(name):
        raise ValueError(f"worker name {name!r} must match {NAME_RE.pattern}")
    return "worker_" + name.replace("-", "_")


def provision_sql(role: str, password: str) -> str:
    """Idempotent SQL creating (or re-keying) ``role`` with DML-only access to the platform's tables.

    Run by the role that owns the tables and runs the migrations (``arena``): its default privileges then
    give the workers' group access to tables later migrations create.
    """
    valid_password = re.fullmatch(r"[A-Za-z0-9]{16,128}", password)
    if not re.fullmatch(r"worker_[a-z0-9_]{1,50}", role) or not valid_password:
        raise ValueError("refusing an unexpected role name or password")
    g = WORKERS_GROUP
    return f"""
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{g}') THEN CREATE ROLE {g} NOLOGIN; END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
    ALTER ROLE {role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION PASSWORD '{password}';
  ELSE
    CREATE ROLE {role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION INHERIT
      PASSWORD '{password}' IN ROLE {g};
  END IF;
END $$;
GRANT USAGE ON SCHEMA public TO {g};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {g};
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {g};
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {g};
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {g};
"""  # noqa: S608 - identifiers and password validated above; psql reads it on stdin


def revoke_sql(role: str) -> str:
    """SQL ending the role's sessions and dropping it (nothing is owned by a worker role)."""
    if not re.fullmatch(r"worker_[a-z0-9_]{1,50}", role):
        raise ValueError(f"refusing an unexpected role name {role!r}")
    terminate = f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = '{role}';"  # noqa: S608
    return f"{terminate}\nDROP ROLE IF EXISTS {role};\n"


def run_psql(psql: Sequence[str], sql: str, timeout_s: float = 60.0) -> None:
    """Feed ``sql`` to a psql command on stdin (passwords never appear in a process's arguments)."""
    done = subprocess.run(
        [*psql, "-v", "ON_ERROR_STOP=1", "-q", "-X"],
        input=sql,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"psql exited {done.returncode}: {done.stderr.strip()[-500:]}")


@dataclass
class DatabaseTarget:
    """Where workers reach PostgreSQL, and how the join service creates their roles there."""

    host: str
    psql: list[str]
    port: int = 5432
    name: str = "arena"

    def url(self, role: str, password: str) -> str:
        return f"postgres://{role}:{password}@{self.host}:{self.port}/{self.name}"


# --- the service --------------------------------------------------------------------------------------------
def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines (comments and blanks skipped; no quoting, as in docker's env files)."""
    env: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key):
            raise ValueError(f"{path}:{number}: not a KEY=VALUE line")
        env[key] = value
    return env


@dataclass
class JoinService:
    """What a joining worker receives, and the bookkeeping making each ticket single-use."""

    key: str
    spent: SpentTickets
    env: dict[str, str] = field(default_factory=dict)
    database: DatabaseTarget | None = None
    registry_ca: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def join(self, ticket: str) -> dict[str, Any]:
        """The settings of the worker named in ``ticket``; TicketError / JoinRefused when refused."""
        name, nonce = check_ticket(self.key, ticket)
        if not self.spent.claim(name, nonce):
            raise JoinRefused(f"join ticket of {name} was already used")
        try:
            env = dict(self.env)
            if self.database is not None:
                role, password = worker_role(name), secrets.token_hex(24)
                with self._lock:  # one role change at a time (GRANTs on the same group)
                    run_psql(self.database.psql, provision_sql(role, password))
                env["DATABASE_URL"] = self.database.url(role, password)
        except Exception:
            self.spent.release(name, nonce)
            raise
        return {"name": name, "env": env, "registry_ca": self.registry_ca}


class _Handler(BaseHTTPRequestHandler):
    server: JoinHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.client_address[0], format % args)

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._reply(HTTPStatus.OK, {"ok": True})
        else:
            self._reply(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(min(length, 4096))
        if self.path != "/v1/join":
            self._reply(HTTPStatus.NOT_FOUND, {"error": "not found"})
            return
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            self._reply(HTTPStatus.UNAUTHORIZED, {"error": "send the join ticket as Authorization: Bearer"})
            return
        try:
            answer = self.server.service.join(auth.removeprefix("Bearer "))
        except TicketError as exc:
            log.warning("join refused from %s: %s", self.client_address[0], exc)
            self._reply(HTTPStatus.UNAUTHORIZED, {"error": str(exc)})
        except JoinRefused as exc:
            log.warning("join refused from %s: %s", self.client_address[0], exc)
            self._reply(HTTPStatus.CONFLICT, {"error": str(exc)})
        except Exception as exc:  # provisioning failed: the ticket stays valid, the worker retries
            log.exception("join failed on our side")
            self._reply(HTTPStatus.SERVICE_UNAVAILABLE, {"error": f"join failed on the main machine: {exc}"})
        else:
            log.info("worker %s joined from %s", answer["name"], self.client_address[0])
            self._reply(HTTPStatus.OK, answer)


class JoinHTTPServer(ThreadingHTTPServer):
    """The join service: ``POST /v1/join`` (``Authorization: Bearer <ticket>``) and ``GET /healthz``."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], service: JoinService) -> None:
        super().__init__(address, _Handler)
        self.service = service


# --- the worker's side --------------------------------------------------------------------------------------
def request_join(main_url: str, ticket: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """One join attempt. JoinRefused for a refusal (401/409/400); OSError when not reachable or 5xx."""
    request = urllib.request.Request(  # noqa: S310 - an http(s) URL given by the operator
        main_url.rstrip("/") + "/v1/join",
        data=b"",
        method="POST",
        headers={"Authorization": f"Bearer {ticket}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = json.loads(exc.read()).get("error", "")
        except ValueError:
            detail = ""
        if exc.code in (400, 401, 403, 404, 409):
            raise JoinRefused(f"the join service refused this worker (HTTP {exc.code}): {detail}") from exc
        raise OSError(f"join service answered HTTP {exc.code}: {detail}") from exc


def join_with_retries(
    main_url: str, ticket: str, deadline_s: float, interval_s: float = 5.0
) -> dict[str, Any]:
    """Retry while the main machine is unreachable or busy (it may still be booting), up to ``deadline_s``."""
    give_up = time.monotonic() + deadline_s
    while True:
        try:
            return request_join(main_url, ticket)
        except JoinRefused:
            raise
        except OSError as exc:
            if time.monotonic() + interval_s > give_up:
                raise OSError(f"could not join {main_url} within {deadline_s:.0f}s: {exc}") from exc
            log.info("join service not ready (%s); retrying in %.0fs", exc, interval_s)
            time.sleep(interval_s)


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def install_join(answer: dict[str, Any], base_env: Path | None, out: Path, certs_dir: Path | None) -> None:
    """Write the worker's env file (base settings + joined ones + a SECRET_KEY of its own) and the CA.

    The worker gets a random SECRET_KEY of its own, never the web's: no worker task signs anything the web
    verifies, so a worker that leaked its key could not forge sessions.
    """
    env = read_env_file(base_env) if base_env else {}
    for key, value in answer.get("env", {}).items():
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", key) or "\n" in str(value):
            raise ValueError(f"the join service sent an invalid setting {key!r}")
        env[key] = str(value)
    env.setdefault("SECRET_KEY", secrets.token_urlsafe(48))
    _write_private(out, "".join(f"{k}={v}\n" for k, v in env.items()))
    registry = env.get("AGENT_REGISTRY", "")
    ca = answer.get("registry_ca", "")
    if certs_dir is not None and registry and ca:
        host = registry.split("/", 1)[0]
        _write_private(Path(certs_dir) / host / "ca.crt", ca)


# --- command line -------------------------------------------------------------------------------------------
def _key(args: argparse.Namespace) -> str:
    key = Path(args.key_file).read_text().strip()
    if len(key) < 32:
        raise SystemExit(f"{args.key_file}: the join key must be at least 32 characters")
    return key


def _serve(args: argparse.Namespace) -> int:
    host, _, port = args.bind.rpartition(":")
    database = None
    if args.psql:
        database = DatabaseTarget(
            host=args.database_host or host, psql=shlex.split(args.psql), port=args.database_port,
            name=args.database_name,
        )  # fmt: skip
    service = JoinService(
        key=_key(args),
        spent=SpentTickets(Path(args.spent_dir)),
        env=read_env_file(Path(args.env_file)) if args.env_file else {},
        database=database,
        registry_ca=Path(args.registry_ca).read_text() if args.registry_ca else "",
    )
    server = JoinHTTPServer((host, int(port)), service)
    log.info("join service listening on %s:%s", *server.server_address[:2])
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


def _fetch(args: argparse.Namespace) -> int:
    ticket = Path(args.ticket_file).read_text().strip()
    try:
        answer = join_with_retries(args.main, ticket, args.deadline, args.interval)
    except JoinRefused as exc:
        print(f"join: {exc}", file=sys.stderr)
        print(
            "join: a spent ticket cannot be reused: give the worker a new one (terraform: replace its "
            "random_id.worker_join; autoscaler: destroy the droplet, it makes a new one)",
            file=sys.stderr,
        )
        return 3
    except OSError as exc:
        print(f"join: {exc}", file=sys.stderr)
        return 2
    install_join(
        answer, Path(args.base_env) if args.base_env else None, Path(args.out),
        Path(args.certs_dir) if args.certs_dir else None,
    )  # fmt: skip
    print(f"join: {answer['name']} joined; settings in {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python3 -m autoscaler.join``."""
    parser = argparse.ArgumentParser(prog="python3 -m autoscaler.join", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the join service (main droplet, private address)")
    serve.add_argument("--bind", required=True, help="HOST:PORT")
    serve.add_argument("--key-file", required=True)
    serve.add_argument("--spent-dir", required=True)
    serve.add_argument("--env-file", help="KEY=VALUE settings every worker receives")
    serve.add_argument("--psql", help="psql command (as the tables' owner) creating per-worker roles")
    serve.add_argument("--database-host", help="host workers reach PostgreSQL at (default: --bind's)")
    serve.add_argument("--database-port", type=int, default=5432)
    serve.add_argument("--database-name", default="arena")
    serve.add_argument("--registry-ca", help="PEM of the CA that signed the registry's certificate")
    fetch = sub.add_parser("fetch", help="join from a worker and write its settings")
    fetch.add_argument("--main", required=True, help="http://<main private address>:8471")
    fetch.add_argument("--ticket-file", required=True)
    fetch.add_argument("--base-env", help="settings to keep (non-secret, from the worker's user-data)")
    fetch.add_argument("--out", required=True, help="env file to write (mode 0600)")
    fetch.add_argument("--certs-dir", help="Docker's certs.d (CA to <dir>/<host:port>/ca.crt)")
    fetch.add_argument("--deadline", type=float, default=1800.0, help="seconds to keep retrying")
    fetch.add_argument("--interval", type=float, default=5.0)
    mint = sub.add_parser("mint", help="print a join ticket for a worker added by hand")
    mint.add_argument("--key-file", required=True)
    mint.add_argument("name")
    revoke = sub.add_parser("revoke", help="drop a worker's database role (and end its sessions)")
    revoke.add_argument("--psql", required=True)
    revoke.add_argument("name")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="ts=%(asctime)s level=%(levelname)s msg=%(message)s")
    if args.command == "serve":
        return _serve(args)
    if args.command == "fetch":
        return _fetch(args)
    if args.command == "mint":
        print(make_ticket(_key(args), args.name))
        return 0
    run_psql(shlex.split(args.psql), revoke_sql(worker_role(args.name)))
    print(f"revoked {worker_role(args.name)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
