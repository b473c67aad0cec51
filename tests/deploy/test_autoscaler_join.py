"""autoscaler.join: one-time join tickets, the join service over HTTP, per-worker PostgreSQL roles.

The database part runs against the real PostgreSQL (a scratch database next to DATABASE_URL's); the
worker's side is the real ``python -m autoscaler.join fetch`` command a droplet runs at boot.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from deploy_helpers import REPO, require

from autoscaler.join import (
    DatabaseTarget,
    JoinHTTPServer,
    JoinService,
    SpentTickets,
    TicketError,
    check_ticket,
    make_ticket,
    read_env_file,
    worker_role,
)

KEY = "k" * 40
SHARED_ENV = {
    "REDIS_URL": "redis://:redis-pass@10.42.0.5:6379/0",
    "CELERY_BROKER_URL": "redis://:redis-pass@10.42.0.5:6379/0",
    "AGENT_REGISTRY": "10.42.0.5:5000/rl-arena",
    "AGENT_REGISTRY_USERNAME": "arena",
    "AGENT_REGISTRY_PASSWORD": "registry-pass",
}
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_a_ticket_names_its_worker_and_only_the_join_key_signs_it() -> None:
    ticket = make_ticket(KEY, "rl-arena-worker-1", "ab" * 16)
    assert check_ticket(KEY, ticket) == ("rl-arena-worker-1", "ab" * 16)
    name, nonce, mac = ticket.split(".")
    with pytest.raises(TicketError, match="not signed"):
        check_ticket("x" * 40, ticket)
    with pytest.raises(TicketError, match="not signed"):  # another worker's name with this mac
        check_ticket(KEY, f"rl-arena-worker-2.{nonce}.{mac}")
    for bad in ("", "a.b", f"{name}.{nonce}.{mac}.x", f"Evil!.{nonce}.{mac}", f"{name}.zz.{mac}"):
        with pytest.raises(TicketError):
            check_ticket(KEY, bad)
    with pytest.raises(ValueError):
        make_ticket(KEY, "Not A Name")


def test_a_ticket_is_spent_exactly_once_even_when_presented_concurrently(tmp_path: Path) -> None:
    spent = SpentTickets(tmp_path / "spent")
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: spent.claim("w-1", "ab" * 8), range(32)))
    assert results.count(True) == 1


@pytest.fixture
def join_server(tmp_path: Path) -> Iterator[tuple[str, JoinService]]:
    """A join service on 127.0.0.1 (no database), served by the real HTTP server in a thread."""
    service = JoinService(KEY, SpentTickets(tmp_path / "spent"), env=dict(SHARED_ENV), registry_ca=CA)
    server = JoinHTTPServer(("127.0.0.1", 0), service)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", service
    server.shutdown()
    server.server_close()


def fetch(main: str, ticket: str, workdir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """The worker's boot step, as the cloud-init runs it (system python3 would do; the venv's is here)."""
    (workdir / "ticket").write_text(ticket + "\n")
    (workdir / "base.env").write_text("SANDBOX=docker\nWORKER_CONCURRENCY=3\n")
    return subprocess.run(
        [sys.executable, "-m", "autoscaler.join", "fetch", "--main", main, "--ticket-file",
         str(workdir / "ticket"), "--base-env", str(workdir / "base.env"),
         "--out", str(workdir / "worker.env"), "--certs-dir", str(workdir / "certs.d"),
         "--deadline", "30", "--interval", "0.2", *extra],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_worker_joins_once_and_gets_the_shared_settings_the_ca_and_a_key_of_its_own(
    join_server: tuple[str, JoinService], tmp_path: Path
) -> None:
    main, _ = join_server
    ticket = make_ticket(KEY, "rl-arena-worker-1")
    done = fetch(main, ticket, tmp_path)
    assert done.returncode == 0, done.stderr
    env = read_env_file(tmp_path / "worker.env")
    assert env["SANDBOX"] == "docker" and env["WORKER_CONCURRENCY"] == "3"  # the base settings are kept
    for key, value in SHARED_ENV.items():
        assert env[key] == value
    assert len(env["SECRET_KEY"]) >= 32
    assert (tmp_path / "worker.env").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "certs.d" / "10.42.0.5:5000" / "ca.crt").read_text() == CA

    (tmp_path / "again").mkdir()
    again = fetch(main, ticket, tmp_path / "again")
    assert again.returncode == 3
    assert "already used" in again.stderr and "new one" in again.stderr
    assert not (tmp_path / "again" / "worker.env").exists()


def test_bad_tickets_are_refused_at_once_with_a_reason(join_server: tuple[str, JoinService]) -> None:
    main, _ = join_server
    forged = make_ticket("y" * 40, "rl-arena-worker-1")
    for headers, status in (({"Authorization": f"Bearer {forged}"}, 401), ({}, 401)):
        request = urllib.request.Request(main + "/v1/join", data=b"", method="POST", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == status
        assert b"error" in refused.value.read()


def test_a_worker_waits_for_a_main_machine_that_is_not_up_yet(tmp_path: Path) -> None:
    """Nothing listens: fetch retries until its deadline, then says so (exit 2), writing nothing."""
    done = fetch("http://127.0.0.1:9", make_ticket(KEY, "w-1"), tmp_path, "--deadline", "1")
    assert done.returncode == 2
    assert "could not join" in done.stderr
    assert not (tmp_path / "worker.env").exists()


# --- per-worker PostgreSQL roles against the real server ----------------------------------------------------
def _database_url() -> str:
    return os.environ.get("DATABASE_URL", "")


@pytest.fixture
def scratch_database() -> Iterator[str]:
    """A fresh database next to DATABASE_URL's, with one table and sequence owned by the admin user."""
    url = _database_url()
    require(url.startswith("postgres"), "DATABASE_URL does not point at PostgreSQL")
    import psycopg

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'rl_arena'}_join"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    scratch = urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(scratch, autocommit=True) as conn:
        conn.execute("CREATE TABLE duel (id serial PRIMARY KEY, state text NOT NULL)")
    yield scratch
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        for role in ("worker_rl_arena_worker_7", "worker_rl_arena_worker_8"):
            conn.execute(f"DROP ROLE IF EXISTS {role}")


def test_each_worker_gets_a_database_role_of_its_own_with_table_access_only(
    scratch_database: str, tmp_path: Path
) -> None:
    import psycopg

    parts = urlsplit(scratch_database)
    psql = ["psql", scratch_database]
    database = DatabaseTarget(host=parts.hostname or "127.0.0.1", psql=psql, port=parts.port or 5432,
                              name=parts.path.lstrip("/"))  # fmt: skip
    service = JoinService(KEY, SpentTickets(tmp_path / "spent"), env=dict(SHARED_ENV), database=database)
    answer = service.join(make_ticket(KEY, "rl-arena-worker-7"))
    worker_url = answer["env"]["DATABASE_URL"]
    assert worker_url.startswith(f"postgres://{worker_role('rl-arena-worker-7')}:")

    with psycopg.connect(worker_url, autocommit=True) as conn:
        conn.execute("INSERT INTO duel (state) VALUES ('QUEUED')")
        conn.execute("UPDATE duel SET state = 'DONE'")
        assert conn.execute("SELECT state FROM duel").fetchall() == [("DONE",)]
        conn.execute("DELETE FROM duel")
        for forbidden in ("CREATE TABLE evil (x int)", "DROP TABLE duel", "SET ROLE postgres",
                          "ALTER TABLE duel ADD COLUMN x int", "CREATE ROLE evil"):  # fmt: skip
            with pytest.raises(psycopg.Error):
                conn.execute(forbidden)

    # A table a later migration creates is reachable too (default privileges of the tables' owner).
    with psycopg.connect(scratch_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE later (id serial PRIMARY KEY)")
    with psycopg.connect(worker_url, autocommit=True) as conn:
        conn.execute("INSERT INTO later DEFAULT VALUES")

    # Another worker: another role and password; revoking one ends only that one.
    other = service.join(make_ticket(KEY, "rl-arena-worker-8"))["env"]["DATABASE_URL"]
    assert other != worker_url
    revoked = subprocess.run(
        [sys.executable, "-m", "autoscaler.join", "revoke", "--psql", f"psql {scratch_database}",
         "rl-arena-worker-7"], cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert revoked.returncode == 0, revoked.stderr
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(worker_url)
    with psycopg.connect(other) as conn:
        assert conn.execute("SELECT count(*) FROM duel").fetchone() == (0,)


def test_a_failed_provisioning_keeps_the_ticket_valid(scratch_database: str, tmp_path: Path) -> None:
    unreachable = DatabaseTarget(host="127.0.0.1", psql=["psql", "postgres://nobody@127.0.0.1:1/x"])
    service = JoinService(KEY, SpentTickets(tmp_path / "spent"), database=unreachable)
    ticket = make_ticket(KEY, "rl-arena-worker-8")
    with pytest.raises(RuntimeError, match="psql exited"):
        service.join(ticket)
    parts = urlsplit(scratch_database)
    port, name = parts.port or 5432, parts.path.lstrip("/")
    service.database = DatabaseTarget(host="127.0.0.1", psql=["psql", scratch_database], port=port, name=name)
    assert service.join(ticket)["name"] == "rl-arena-worker-8"
