"""Control-plane capacity: ten-match duel results recorded AND rated per second, through the real path.

    .venv/bin/python benchmarks/bench_control_plane.py [--duels 3000] [--workers 8] [--raters 2]
        [--competitors 200] [--games 1] [--history 0] [--heartbeats 0] [--live-writes 0]
        [--conn-max-age N] [--experiment NAME] [--keep] [--json FILE] [--profile DIR]

What runs is what a fleet runs, against PostgreSQL and Redis:

- ``--workers`` simulated worker processes (each its own process and database connection, kept for
  ``--conn-max-age`` seconds as a Celery worker keeps it (``core.worker``: Django's
  ``close_old_connections`` around each task), by default ``example.env``'s value; opened and closed per
  duel with ``--conn-max-age 0``, which is what every Celery worker did whatever the setting until
  Celery's Django fix-up was told to leave connections alone, ``core.celery``) take duel ids from a Redis
  list and run each through the
  real job runner
  (``core.jobs.runner.run_job``) with the duel job kind of :func:`duel_job`, whose work returns a finished
  duel JSON instead of playing: the fenced claim (``core.actions.claim_duel``), the heartbeat thread,
  ``--heartbeats`` lease extensions and ``--live-writes`` stores of the matches so far (what a longer duel
  does while it runs), and ``core.actions.record_duel_result`` with the claim (every Match row with its
  actions, move times and the states the rules cannot replay, in one COPY; the pause check; the rating
  trigger sent to the broker after commit).
- A real Celery worker (``--raters`` prefork processes, a queue private to the run) consumes the
  triggers: ``tournament_manager.rate_environment`` (rating runs, TrueSkill under the environment's
  lock, rating history, ``Rating.updated_at`` stamps), the debounced tie-fit trigger, and the tie-fit
  refresh when its countdown (``--tie-fit-delay``, 60 s as in production) ends: the Bradley-Terry fit and
  its store, which writes the fit to the cache and bumps ``Rating.updated_at``, the leaderboard cache
  invalidation.
- Duel JSONs are real: ``--pool`` ten-match duels per game played by the real referee (in-process
  harness, the example random players), each validated against ``run_duel/duel_result.schema.json``; a
  share ``--error-share`` of the duels has one match lost to a player TIMEOUT (so the pause check runs).
- ``--history N`` preloads N rated duels (COPY) so the run meets tables of a platform up for a while.
- ``--experiment`` patches a proposed change of the record path into the simulated workers, to measure
  it before it is made (:data:`EXPERIMENTS`).

It prints recorded/s and rated/s, per-phase time and SQL counts on both sides, the slowest statements,
CPU per result of PostgreSQL (the bench's own backends, and every postgres process of the shared
server), the rating worker, Redis and the workers, disk per result (the duel, match and rating history
tables, as the run left them and after a VACUUM, per index too; the rating rows per competitor), the load
average, and checks that every duel ended FINISHED and was rated exactly once (non-zero exit otherwise).
The database (``--db``, created and migrated here) is dropped at the end unless ``--keep``. The last line is
``results/s: N``: duels recorded and rated per second, from the start to the last rating.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import multiprocessing as mp
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def shipped_conn_max_age() -> int:
    """``DATABASE_CONN_MAX_AGE`` as ``example.env`` ships it: the configuration operators run."""
    for line in (REPO / "example.env").read_text().splitlines():
        if line.startswith("DATABASE_CONN_MAX_AGE="):
            return int(line.split("=", 1)[1])
    return 0


sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_db import drop_database, recreate_database  # noqa: E402 (after the path set-up)

GAMES = ("connect-four", "tic-tac-toe", "quarto")
MATCHES = 10
RANDOM_PLAYER = REPO / "example_players" / "random"


#: Proposed changes of ``core.actions.record_duel_result`` (not this bench's to make), measurable here by
#: patching them into the simulated workers; see :func:`apply_experiments`.
EXPERIMENTS = {
    "debounced-trigger": "the rating trigger is sent only when the result sets the environment's pending "
    "mark (cache.add of core.rating_outbox.pending_key), not after every result",
}


# --- configuration shared by every process of a run ----------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--role`` is internal: the rater subprocess)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--duels", type=int, default=3000, help="ten-match duel results to record and rate")
    p.add_argument("--workers", type=int, default=8, help="simulated worker processes")
    p.add_argument("--raters", type=int, default=2, help="Celery prefork processes consuming rating hints")
    p.add_argument("--competitors", type=int, default=200, help="competitors per game")
    p.add_argument("--games", type=int, default=1, choices=range(1, len(GAMES) + 1), help="ladders in play")
    p.add_argument("--pool", type=int, default=24, help="distinct real duel JSONs per game")
    p.add_argument(
        "--history",
        type=int,
        default=0,
        help="rated duels already in the database before the run (10 matches each, final boards only)",
    )
    p.add_argument("--error-share", type=float, default=0.05, help="duels with one player-error match")
    p.add_argument("--heartbeats", type=int, default=0, help="lease extensions per duel (3 s apart live)")
    p.add_argument(
        "--live-writes", type=int, default=0, help="stores of the matches so far per duel (1 s apart live)"
    )
    p.add_argument("--tie-fit-delay", type=float, default=60.0, help="tie-fit debounce, s (as production)")
    p.add_argument(
        "--conn-max-age",
        type=int,
        default=shipped_conn_max_age(),
        help="DATABASE_CONN_MAX_AGE of every process (default: the value example.env ships)",
    )
    p.add_argument("--timeout", type=float, default=600.0, help="give up after this many seconds")
    p.add_argument("--db", default="rl_arena_bench_cp")
    p.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server URL, no db name")
    p.add_argument("--redis", default=os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/13"))
    p.add_argument("--keep", action="store_true", help="keep the database (and print its name)")
    p.add_argument("--json", type=Path, help="also write the summary as JSON to this file")
    p.add_argument("--profile", type=Path, help="write cProfile stats of every worker and rater here")
    p.add_argument(
        "--experiment",
        action="append",
        choices=sorted(EXPERIMENTS),
        default=[],
        help="measure a proposed change of the record path (patched into the simulated workers)",
    )
    p.add_argument("--role", choices=("main", "rater"), default="main", help=argparse.SUPPRESS)
    p.add_argument("--run-id", default="", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def process_env(args: argparse.Namespace, run_id: str, data_dir: str) -> dict[str, str]:
    """Environment variables every process of the run uses (settings are read from them)."""
    return {
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": f"{args.pg}/{args.db}",
        "DATABASE_CONN_MAX_AGE": str(args.conn_max_age),
        "REDIS_URL": args.redis,
        "CELERY_BROKER_URL": args.redis,
        "CELERY_QUEUE": f"bench-cp-{run_id}",
        "DATA_DIR": data_dir,
        "TM_TIE_FIT_DELAY_SECONDS": str(args.tie_fit_delay),
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-control-plane-" + "x" * 40,
        "DEBUG": "0",
        "LOG_LEVEL": "warning",
        "CELERY_SKIP_CHECKS": "1",  # Django's system checks at worker start are not what is measured
    }


def setup_django(run_id: str) -> None:
    """``django.setup()`` with the run's cache key prefix (a run never sees another run's debounce keys)."""
    import django
    from django.conf import settings

    django.setup()
    settings.CACHES["default"]["KEY_PREFIX"] = f"bench-cp-{run_id}"


def redis_client(url: str) -> Any:
    """A Redis client for the run's own keys (work list, rater statistics)."""
    import redis

    return redis.Redis.from_url(url)


# --- per-phase time and SQL counts ---------------------------------------------------------------------


class BackendCpu:
    """CPU seconds spent by the PostgreSQL backends serving this process's connections (read from /proc:
    the server runs on this machine). Sampled before a connection closes, so a backend that served one
    duel and exited is counted with its start-up."""

    def __init__(self) -> None:
        self.total = 0.0
        self._seen: dict[int, float] = {}

    def sample(self) -> None:
        """Add what the current connection's backend used since the last sample."""
        from django.db import connection

        raw = connection.connection
        if raw is None:
            return
        pid = raw.info.backend_pid
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            return
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        before = self._seen.get(pid, 0.0)
        self.total += cpu - before if cpu >= before else cpu  # a lower figure: a new backend, same pid
        self._seen[pid] = cpu


#: Per-statement entries among the phases (``"sql | <phase> | <statement shape>"``).
SQL_PREFIX = "sql | "


def sql_shape(sql: str) -> str:
    """A statement's first words, identifiers unquoted (its parameters are placeholders already)."""
    return " ".join(sql.replace('"', "").split())[:120].replace(":", ";")


class Phases:
    """Wall time, calls and SQL statements per named phase; SQL counts and statement timings go to the
    innermost open phase."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.sql: dict[str, int] = {}
        self._stack: list[str] = []

    def _count_sql(self, execute: Callable, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not self._stack:
            return execute(sql, params, many, context)
        name = self._stack[-1]
        self.sql[name] = self.sql.get(name, 0) + 1
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            key = f"{SQL_PREFIX}{name} | {sql_shape(sql)}"
            self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - t0
            self.calls[key] = self.calls.get(key, 0) + 1

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as ``name`` and count its SQL statements (on the default connection)."""
        from django.db import connection

        outermost = not self._stack
        self._stack.append(name)
        t0 = time.perf_counter()
        try:
            if outermost:
                with connection.execute_wrapper(self._count_sql):
                    yield
            else:
                yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0
            self.calls[name] = self.calls.get(name, 0) + 1
            self._stack.pop()

    def wrap(self, module: Any, attr: str, name: str) -> None:
        """Replace ``module.attr`` by the same function, timed as phase ``name``."""
        original = getattr(module, attr)

        def timed(*a: Any, **kw: Any) -> Any:
            with self.phase(name):
                return original(*a, **kw)

        timed.__wrapped__ = original  # type: ignore[attr-defined]
        setattr(module, attr, timed)

    def as_dict(self) -> dict[str, dict[str, float]]:
        """``{phase: {"calls", "seconds", "sql"}}``."""
        return {
            k: {"calls": self.calls[k], "seconds": self.seconds[k], "sql": self.sql.get(k, 0)}
            for k in self.calls
        }

    def reset(self) -> None:
        """Forget everything counted so far."""
        self.seconds.clear()
        self.calls.clear()
        self.sql.clear()


def merge(into: dict[str, dict[str, float]], more: dict[str, dict[str, float]]) -> None:
    """Add the phases of ``more`` to ``into``."""
    for k, v in more.items():
        slot = into.setdefault(k, {"calls": 0, "seconds": 0.0, "sql": 0})
        for f in ("calls", "seconds", "sql"):
            slot[f] += v[f]


# --- a simulated worker: the duel runner's side of the result path -------------------------------------


def duel_job(
    phases: Phases, duel_json_of: Callable[[Any], dict[str, Any]], heartbeats: int = 0, live_writes: int = 0
) -> Any:
    """The duel runner's job kind (``duel_runner.tasks.DUEL``) with the bench's work in place of playing:
    ``core.jobs.runner.run_job`` claims, keeps the claim alive, records (fenced by the claim's generation)
    exactly as for a real duel. A longer duel's work is simulated by ``heartbeats`` lease extensions and
    ``live_writes`` stores of the matches played so far (a real duel does one of each every
    ``HEARTBEAT_SECONDS`` and ``LIVE_MATCHES_SECONDS``). The ONE place that knows the claim/record API;
    each step is timed."""
    from core.actions import (
        Claim,
        claim_duel,
        extend_lease,
        fail_duel,
        record_duel_result,
        record_matches_so_far,
    )
    from core.jobs.runner import JobKind
    from core.models import Duel

    def claim(duel_id: int) -> Duel | None:
        with phases.phase("claim"):
            return claim_duel(duel_id)

    def work(duel: Duel, claim: Claim) -> dict[str, Any]:
        # What the real work reads before playing (loaded by the claim), then the lease kept alive.
        _ = (duel.environment.slug, duel.revision_1.agent_ref, duel.revision_2.agent_ref)
        duel_json = duel_json_of(duel)
        matches = duel_json["matches"]
        for _ in range(heartbeats):
            with phases.phase("heartbeat (lease extension)"):
                extend_lease(Duel, claim)
        for k in range(live_writes):
            first, last = k * len(matches) // live_writes, (k + 1) * len(matches) // live_writes
            with phases.phase("live matches (stored while running)"):
                record_matches_so_far(claim, first, matches[first:last])
        return duel_json

    def record(claim: Claim, duel_json: dict[str, Any]) -> bool:
        with phases.phase("record"):
            return record_duel_result(claim, duel_json)

    return JobKind(
        name="bench-duel",
        model=Duel,
        claim=claim,
        work=work,
        record=record,
        fail=fail_duel,
        uses_sandbox=False,  # the sandbox health probe is the worker's own business, not the database's
    )


def apply_experiments(names: list[str]) -> None:
    """Patch the proposed record-path changes ``names`` (keys of :data:`EXPERIMENTS`) into this process."""
    from django.conf import settings
    from django.core.cache import cache
    from django.db import transaction

    import core.actions.duels as duels
    from core.queue import send_task
    from core.rating_outbox import TTL_S, pending_key

    if "debounced-trigger" in names:
        original = duels.enqueue_on_commit

        def enqueue_on_commit(task: Any, *args: Any, **kw: Any) -> None:
            if task != settings.RATING_TASK_NAME:
                return original(task, *args, **kw)

            def send() -> None:
                if cache.add(pending_key(args[0]), 1, timeout=TTL_S):
                    send_task(task, *args)

            transaction.on_commit(send)

        duels.enqueue_on_commit = enqueue_on_commit


def worker_main(
    args: argparse.Namespace,
    run_id: str,
    env: dict[str, str],
    pool_file: str,
    start: Any,
    out: Any,
    warm: Any,
) -> None:
    """A simulated worker process: record one duel to warm up (its imports, its connection, the game's
    rules: 8-15 s for eight processes on this loaded machine, which a short run would count as the
    control plane's), say so on ``warm``, then, once ``start`` is set, take duel ids from the run's Redis
    list until it is empty."""
    os.environ.update(env)
    setup_django(run_id)
    from django.db import close_old_connections, connection

    import core.queue
    from core.jobs.runner import run_job

    apply_experiments(args.experiment)
    pools: dict[str, dict[str, list]] = json.loads(Path(pool_file).read_text())
    phases = Phases()
    phases.wrap(core.queue, "send_task", "record: rating hint to the broker")

    def duel_json_of(duel: Any) -> dict[str, Any]:
        return pick_duel_json(pools, duel.environment.slug, duel.pk, args.error_share)

    kind = duel_job(phases, duel_json_of, args.heartbeats, args.live_writes)
    r = redis_client(args.redis)
    key = f"bench-cp-{run_id}:duels"
    outcomes: dict[str, int] = {}
    profile = cProfile.Profile() if args.profile else None
    backend = BackendCpu()
    if (item := r.lpop(key)) is not None:  # the warm-up duel: recorded and rated, not measured
        close_old_connections()
        outcome = run_job(kind, int(item))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        backend.sample()
        backend.total = 0.0
        phases.reset()
    warm.put(1)
    start.wait()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    if profile:
        profile.enable()
    while (item := r.lpop(key)) is not None:
        close_old_connections()  # as Celery's Django fix-up does before a task
        with phases.phase("connect"):
            connection.ensure_connection()
        with phases.phase("run_job (all of the above, plus the runner)"):
            outcome = run_job(kind, int(item))
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        backend.sample()
        close_old_connections()  # ...and after it
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    if profile:
        profile.disable()
        profile.dump_stats(str(args.profile / f"worker-{os.getpid()}.prof"))
    connection.close()
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    out.put({"outcomes": outcomes, "cpu_s": cpu, "pg_cpu_s": backend.total, "phases": phases.as_dict()})


# --- the rating consumer: a real Celery worker, instrumented -------------------------------------------


def rater_main(args: argparse.Namespace) -> None:
    """The rater subprocess: a Celery worker on the run's queue, phases timed and sent to Redis per task."""
    run_id = args.run_id
    setup_django(run_id)
    from celery import signals

    from core.celery import app
    from tournament_manager import actions, tie_fit

    phases = Phases()
    phases.wrap(actions, "rate_pending_duels", "rating")
    phases.wrap(tie_fit, "request_refresh", "tie-fit trigger")
    phases.wrap(tie_fit, "compute", "tie-fit fit")
    phases.wrap(tie_fit, "store", "cache: store fit, bump Rating.updated_at")
    r = redis_client(args.redis)
    prefix = f"bench-cp-{run_id}:rater"
    started: dict[str, float] = {}

    profile = cProfile.Profile() if args.profile else None
    backend = BackendCpu()

    @signals.task_prerun.connect
    def _prerun(task_id: str, **_: Any) -> None:
        started[task_id] = time.perf_counter()
        if profile:
            profile.enable()

    @signals.task_postrun.connect
    def _postrun(task_id: str, task: Any, retval: Any = None, **_: Any) -> None:
        elapsed = time.perf_counter() - started.pop(task_id, time.perf_counter())
        if profile:
            profile.disable()
            profile.dump_stats(str(args.profile / f"rater-{os.getpid()}.prof"))
        pipe = r.pipeline(transaction=False)
        pipe.hincrbyfloat(prefix, f"task {task.name}:seconds", elapsed)
        pipe.hincrby(prefix, f"task {task.name}:calls", 1)
        if task.name == "tournament_manager.rate_environment":
            pipe.hincrby(prefix, "batches" if retval else "empty", 1)
            pipe.hincrby(prefix, "rated", int(retval or 0))
        for name, v in phases.as_dict().items():
            pipe.hincrbyfloat(prefix, f"{name}:seconds", v["seconds"])
            pipe.hincrby(prefix, f"{name}:calls", v["calls"])
            pipe.hincrby(prefix, f"{name}:sql", v["sql"])
        before = backend.total
        backend.sample()  # before Celery's Django fix-up closes the connection (it is connected later)
        pipe.hincrbyfloat(prefix, "pg_cpu_s", backend.total - before)
        pipe.execute()
        phases.reset()

    @signals.worker_ready.connect
    def _ready(**_: Any) -> None:
        r.set(f"{prefix}:ready", "1", ex=3600)

    app.worker_main(
        [
            "worker",
            "--queues",
            os.environ["CELERY_QUEUE"],
            "--concurrency",
            str(args.raters),
            "--pool",
            "prefork",
            "--hostname",
            f"bench-cp-{run_id}@%h",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ]
    )


def read_rater_stats(r: Any, run_id: str) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Phases and counters the rater processes reported."""
    prefix = f"bench-cp-{run_id}:rater"
    raw = {k.decode(): float(v) for k, v in r.hgetall(prefix).items()}
    phases: dict[str, dict[str, float]] = {}
    counters: dict[str, float] = {}
    for k, v in raw.items():
        name, _, field = k.rpartition(":")
        if field in ("seconds", "calls", "sql"):
            phases.setdefault(name, {"calls": 0, "seconds": 0.0, "sql": 0})[field] = v
        else:
            counters[k] = v
    return phases, counters


# --- setup: database, players, duels, real duel JSONs --------------------------------------------------


def real_duels(game: str, n: int) -> dict[str, list[dict[str, Any]]]:
    """``n`` ten-match duel JSONs played by the real referee (random vs random, in-process harness), each
    validated against the schema (``"clean"``), and copies of a few with one match lost to a player's
    TIMEOUT as the referee reports it (``"error"``: the result path then runs the pause check)."""
    from run_duel.duel_result import MATCH_SCORES, aggregate, validate_duel_json
    from run_duel.referee import play_duel
    from run_duel.sandbox.base import LaunchSpec, Limits
    from run_duel.sandbox.inprocess import InProcessSandbox

    spec = LaunchSpec(str(RANDOM_PLAYER))
    limits = Limits(move_timeout=5.0, init_timeout=30.0)
    clean, erring = [], []
    for k in range(n):
        duel = play_duel(game, InProcessSandbox(), spec, spec, matches=MATCHES, limits=limits, pin_cpus=False)
        validate_duel_json(duel)
        assert len(duel["matches"]) == MATCHES
        assert all(m["states"] and m["actions"] and m["move_times"] for m in duel["matches"])
        clean.append(json.loads(json.dumps(duel)))  # exactly what crosses the wire: plain JSON
        if k < max(2, n // 8):
            bad = json.loads(json.dumps(duel))
            seat = 1 + k % 2
            m = bad["matches"][-1]
            m["result"] = f"PLAYER_{seat}_ERROR"
            m["error_kind"] = "TIMEOUT"
            m["error_msg"] = f"player {seat} did not answer within 1.0 s"
            m["player_1_score"], m["player_2_score"] = MATCH_SCORES[m["result"]]
            bad.update(aggregate(bad["matches"]))
            bad[f"player_{seat}_log"] = "Traceback (most recent call last):\n  ...\n" * 20
            validate_duel_json(bad)
            erring.append(bad)
    return {"clean": clean, "error": erring}


def pick_duel_json(pools: dict[str, dict[str, list]], slug: str, duel_id: int, error_share: float) -> Any:
    """The duel JSON duel ``duel_id`` reports: a share ``error_share`` of the duels (spread by a hash of
    the id) come from the error pool."""
    erring = (duel_id * 2654435761) % 10_000 < error_share * 10_000
    pool = pools[slug]["error" if erring else "clean"]
    return pool[duel_id % len(pool)]


def seed(args: argparse.Namespace, rng: random.Random) -> tuple[dict[int, str], list[tuple[int, str]]]:
    """Games, users, competitors with an ELIGIBLE revision each, and ``--duels`` QUEUED ladder duels
    (bulk-inserted: scheduling is not what is measured). Returns env id -> slug and (duel id, slug)."""
    from django.db import transaction
    from django.utils import timezone

    from core.actions import sync_environments
    from core.management.commands.sync_environments import game_infos
    from core.models import Competitor, Duel, Environment, Revision, User

    sync_environments(game_infos())
    envs = {e.pk: e.slug for e in Environment.objects.filter(slug__in=GAMES[: args.games])}
    now = timezone.now()
    with transaction.atomic():
        users = User.objects.bulk_create(
            [
                User(email=f"cp{i}@bench.example", display_name=f"Student {i}", password="!")
                for i in range(max(1, args.competitors // 2))
            ]
        )
        revision_ids: dict[int, list[int]] = {}
        for env_id, slug in envs.items():
            comps = Competitor.objects.bulk_create(
                [
                    Competitor(
                        owner=users[i % len(users)],
                        environment_id=env_id,
                        name=f"{slug}-bot-{i:04d}",
                        is_public=True,
                        next_version=2,
                    )
                    for i in range(args.competitors)
                ]
            )
            revs = Revision.objects.bulk_create(
                [
                    Revision(
                        competitor=c,
                        version=1,
                        state=Revision.State.ELIGIBLE,
                        agent_ref=f"registry.example/agents/{c.pk}@sha256:{'0' * 64}",
                        zip_path=f"submissions/{c.pk}/1.zip",
                        content_hash="0" * 64,
                    )
                    for c in comps
                ]
            )
            for c, rev in zip(comps, revs, strict=True):
                c.current_revision = rev
            Competitor.objects.bulk_update(comps, ["current_revision"])
            revision_ids[env_id] = [rev.pk for rev in revs]
        env_ids = list(envs)
        if args.history:
            preload_history(args, rng, env_ids, revision_ids)
        duels = []
        for k in range(args.duels):
            env_id = env_ids[k % len(env_ids)]
            a, b = rng.sample(revision_ids[env_id], 2)
            duels.append(
                Duel(
                    environment_id=env_id,
                    revision_1_id=a,
                    revision_2_id=b,
                    kind=Duel.Kind.LADDER,
                    num_matches=MATCHES,
                    enqueued_at=now,
                )
            )
        created = Duel.objects.bulk_create(duels, batch_size=2000)
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("ANALYZE")
    return envs, [(d.pk, envs[d.environment_id]) for d in created]


def preload_history(
    args: argparse.Namespace, rng: random.Random, env_ids: list[int], revision_ids: dict[int, list[int]]
) -> None:
    """COPY ``--history`` finished, rated ladder duels (with their Match rows, Rating rows and two rating
    history rows each) so the run meets tables of a platform that has been up for a while. Match rows
    carry the final board only: index sizes are realistic, disk use is not."""
    from datetime import timedelta

    from bench_web import copy_rows
    from django.db import connection
    from django.utils import timezone

    from core.match_moves import pack
    from core.models import Duel, Match, Rating, RatingHistory, Revision

    t0 = time.perf_counter()
    now = timezone.now()
    competitor_of = dict(Revision.objects.values_list("pk", "competitor_id"))
    board = json.dumps([{"board": [[0] * 7 for _ in range(6)], "to_move": 0, "done": True}])
    connection.ensure_connection()
    cur = connection.connection.cursor()
    pairs = []
    for k in range(args.history):
        env_id = env_ids[k % len(env_ids)]
        a, b = rng.sample(revision_ids[env_id], 2)
        wins = rng.randint(0, MATCHES)
        result = "PLAYER_1_WIN" if 2 * wins > MATCHES else "PLAYER_2_WIN" if 2 * wins < MATCHES else "DRAW"
        when = now - timedelta(seconds=2 * (args.history - k))
        pairs.append((env_id, a, b, wins, result, when))
    copy_rows(
        cur,
        Duel,
        {"state": "FINISHED", "kind": "LADDER", "rated": True, "attempts": 1, "num_matches": MATCHES},
        [
            *("environment_id", "revision_1_id", "revision_2_id", "player_1_wins", "player_2_wins"),
            *("result", "player_1_score", "player_2_score", "finished_at", "rated_at", "created_at"),
        ],
        (
            (e, a, b, w, MATCHES - w, res, float(w), float(MATCHES - w), t, t, t)
            for e, a, b, w, res, t in pairs
        ),
    )
    cur.execute("SELECT id, player_1_wins FROM core_duel WHERE rated ORDER BY id")
    finished = cur.fetchall()
    copy_rows(
        cur,
        Match,
        {"error_kind": "", "error_msg": "", "packed_moves": pack([1, 2, 3], [0.001, 0.001, 0.001])},
        ["duel_id", "index", "result", "first_player", "player_1_score", "player_2_score", "states"],
        (
            (d, i, "PLAYER_1_WIN" if i < w else "PLAYER_2_WIN", "PLAYER_1" if i % 2 == 0 else "PLAYER_2")
            + ((1.0, 0.0) if i < w else (0.0, 1.0))
            + (board,)
            for d, w in finished
            for i in range(MATCHES)
        ),
    )
    competitors = sorted({competitor_of[r] for revs in revision_ids.values() for r in revs})
    env_of = dict(Revision.objects.values_list("competitor_id", "competitor__environment_id"))
    copy_rows(
        cur,
        Rating,
        {"updated_at": now},
        ["environment_id", "competitor_id"],
        ((env_of[c], c) for c in competitors),
    )
    cur.execute("SELECT competitor_id, id FROM core_rating")
    rating_of = dict(cur.fetchall())
    copy_rows(
        cur,
        RatingHistory,
        {"mu": 25.0, "sigma": 5.0},
        ["rating_id", "duel_id", "created_at"],
        (
            (rating_of[competitor_of[rev]], d, t)
            for (d, _), (_, a, b, _, _, t) in zip(finished, pairs, strict=True)
            for rev in (a, b)
        ),
    )
    print(f"history: {args.history} rated duels preloaded in {time.perf_counter() - t0:.1f} s", flush=True)


# --- measuring -----------------------------------------------------------------------------------------


def _processes() -> Iterator[tuple[int, int, str, float]]:
    """(pid, parent pid, command name, CPU seconds) of every process, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        head, _, rest = stat.rpartition(")")
        fields = rest.split()
        # fields[1] is the parent pid; [11]..[14] utime, stime and the same of reaped children (stat's
        # fields 4 and 14-17): a backend that served one connection and exited counts in its postmaster
        cpu = sum(int(x) for x in fields[11:15]) / tick
        yield int(pid), int(fields[1]), head.partition("(")[2], cpu


def cpu_seconds(rater_pid: int) -> tuple[float, float, float, float]:
    """CPU seconds so far of (every PostgreSQL process, the rater's process tree, the rater's main process
    alone, the Redis server). PostgreSQL and Redis are shared servers here: their figures include other
    users' activity; the bench prints deltas over its window."""
    procs = list(_processes())
    parent = {pid: ppid for pid, ppid, _, _ in procs}

    def in_tree(pid: int) -> bool:
        while pid > 1:
            if pid == rater_pid:
                return True
            pid = parent.get(pid, 0)
        return False

    pg = sum(cpu for _, _, name, cpu in procs if name.startswith("postgres"))
    rater = sum(cpu for pid, _, _, cpu in procs if in_tree(pid))
    main = sum(cpu for pid, _, _, cpu in procs if pid == rater_pid)
    redis = sum(cpu for _, _, name, cpu in procs if name.startswith("redis-server"))
    return pg, rater, main, redis


#: Tables that grow with every result (its duel row, ten Match rows, two rating history rows) and tables
#: that grow with the competitors (one Rating row each, updated in place every rating round): a short run
#: with few results would inflate a per-result figure of the latter, so they are reported apart.
PER_RESULT_TABLES = ("core_duel", "core_match", "core_ratinghistory")
PER_COMPETITOR_TABLES = ("core_rating",)


def table_bytes() -> dict[str, dict[str, float]]:
    """Bytes on disk of the tables a result writes to: table -> {"heap": with TOAST, "indexes": all of its
    indexes}. Dead row versions and free space included: what the files hold."""
    from django.db import connection

    tables = PER_RESULT_TABLES + PER_COMPETITOR_TABLES
    with connection.cursor() as cur:
        sql = "SELECT relname, pg_table_size(oid), pg_indexes_size(oid) FROM pg_class WHERE relname = ANY(%s)"
        cur.execute(sql, [list(tables)])
        return {t: {"heap": float(h), "indexes": float(i)} for t, h, i in cur.fetchall()}


def bytes_in_use_after_vacuum() -> dict[str, dict[str, float]] | None:
    """VACUUM the tables a result writes to, then the bytes they use: the heap less its free space
    (``pgstattuple``: what VACUUM freed, the dead row versions, is reused by the next results) and each
    index's leaf pages weighted by how full they are (``pgstatindex``; the metapage and the internal pages
    left out: a root page would weigh on a short run's few hundred results, and at scale internal pages
    are well under 1 % of the leaves); TOAST's heap as it is. The free space and visibility maps (a few
    pages a table, about 1/4000 of the heap at scale) are left out too.
    Per index too (``table.index``). None when the ``pgstattuple`` extension cannot be created."""
    from django.db import connection

    tables = PER_RESULT_TABLES + PER_COMPETITOR_TABLES
    with connection.cursor() as cur:
        try:
            cur.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        except Exception as e:  # not installed on this server, or no right to create it
            print(f"(no figures after VACUUM: {e})", flush=True)
            return None
        out: dict[str, dict[str, float]] = {}
        for table in tables:
            cur.execute(f"VACUUM {table}")
            cur.execute(
                "SELECT s.table_len - s.free_space, COALESCE(pg_relation_size(NULLIF(c.reltoastrelid, 0)), 0)"
                " FROM pg_class c, pgstattuple(c.oid) s WHERE c.oid = %s::regclass",
                [table],
            )
            heap, toast = cur.fetchone()
            cur.execute(
                "SELECT c.relname, s.internal_pages, s.leaf_pages, s.avg_leaf_density FROM pg_index i"
                " JOIN pg_class c ON c.oid = i.indexrelid, LATERAL pgstatindex(i.indexrelid) s"
                " WHERE i.indrelid = %s::regclass",
                [table],
            )
            indexes = {  # NaN density: no leaf page yet
                name: 8192.0 * leaf * (density / 100 if density == density else 0.0)
                for name, _internal, leaf, density in cur.fetchall()
            }
            out[table] = {"heap": float(heap + toast), "indexes": sum(indexes.values())}
            out.update({f"{table}.{name}": {"indexes": b} for name, b in indexes.items()})
        return out


def machine_busy_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        values = [int(x) for x in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / tick, sum(values) / tick


def wait_rated(
    first_id: int, total: int, t0: float, timeout: float, healthy: Callable[[], str]
) -> tuple[float | None, float | None]:
    """Poll the database until every duel of the run (ids from ``first_id``) is rated; returns (seconds to
    all recorded, to all rated). Gives up when ``healthy()`` names a problem (a worker or the rater died)."""
    from django.db.models import Count, Q

    from core.models import Duel

    recorded_at = rated_at = None
    last_note = t0
    while time.perf_counter() - t0 < timeout:
        c = Duel.objects.filter(pk__gte=first_id).aggregate(
            finished=Count("pk", filter=Q(state=Duel.State.FINISHED)),
            rated=Count("pk", filter=Q(rated=True)),
        )
        now = time.perf_counter()
        if recorded_at is None and c["finished"] >= total:
            recorded_at = now - t0
        if c["rated"] >= total:
            rated_at = now - t0
            break
        if now - last_note >= 5:
            last_note = now
            print(f"  t={now - t0:5.1f}s recorded {c['finished']:6d} rated {c['rated']:6d}", flush=True)
            problem = healthy()
            if problem:
                print(f"giving up: {problem}", flush=True)
                break
        time.sleep(0.2)
    return recorded_at, rated_at


def verify(first_id: int, total: int) -> dict[str, int]:
    """Counts that show every duel of the run (ids from ``first_id``) ended FINISHED and was rated exactly
    once (preloaded history has ratings with zero counters, so the sums are the run's)."""
    from django.db.models import Count, Q, Sum

    from core.models import Duel, Match, Rating, RatingHistory

    duels = Duel.objects.filter(pk__gte=first_id).aggregate(
        finished=Count("pk", filter=Q(state=Duel.State.FINISHED)),
        rated=Count("pk", filter=Q(state=Duel.State.FINISHED, rated=True, rated_at__isnull=False)),
    )
    ratings = Rating.objects.aggregate(duels=Sum("duels"), matches=Sum("matches"))
    history = RatingHistory.objects.filter(duel_id__gte=first_id)
    per_duel = history.values("duel_id").annotate(n=Count("pk")).exclude(n=2).count()
    return {
        "duels": total,
        "finished": duels["finished"],
        "rated": duels["rated"],
        "match_rows": Match.objects.filter(duel_id__gte=first_id).count(),
        "history_rows": history.count(),
        "duels_without_two_history_rows": per_duel,
        "sum_rating_duels": ratings["duels"] or 0,
        "sum_rating_matches": ratings["matches"] or 0,
    }


def exactly_once(v: dict[str, int]) -> list[str]:
    """What is wrong with the verification counts (empty: all FINISHED, each rated exactly once)."""
    n = v["duels"]
    problems = []
    for key, want in (
        ("finished", n),
        ("rated", n),
        ("match_rows", n * MATCHES),
        ("history_rows", 2 * n),
        ("duels_without_two_history_rows", 0),
        ("sum_rating_duels", 2 * n),
        ("sum_rating_matches", 2 * n * MATCHES),
    ):
        if v[key] != want:
            problems.append(f"{key} is {v[key]}, expected {want}")
    return problems


# --- report --------------------------------------------------------------------------------------------


def disk_lines(disk: dict[str, Any], n: int, competitors: int) -> list[str]:
    """Disk per result (the duel, match and rating history tables) and per competitor (the rating rows),
    as the run left them (dead row versions and part-filled pages included) and after a VACUUM."""

    def kib(b: float, per: int) -> str:
        return f"{b / max(per, 1) / 1024:.2f}"

    def total(t: dict[str, float]) -> float:
        return t.get("heap", 0.0) + t.get("indexes", 0.0)

    lines = []
    for label, sizes in (
        ("as the run left it", disk["grown"]),
        ("after VACUUM", disk["in_use_after_vacuum"]),
    ):
        if sizes is None:
            continue
        what = (
            "growth from the empty tables, dead row versions and free space included"
            if label == "as the run left it"
            else "bytes in use: heap less its free space, index leaf pages by their fill"
        )
        per_result = sum(total(sizes[t]) for t in PER_RESULT_TABLES if t in sizes)
        lines.append(
            f"disk per result, {label}: {kib(per_result, n)} KiB ("
            + ", ".join(
                f"{t} {kib(total(sizes[t]), n)} [heap {kib(sizes[t]['heap'], n)}, "
                f"indexes {kib(sizes[t]['indexes'], n)}]"
                for t in PER_RESULT_TABLES
                if t in sizes
            )
            + f"; {what})"
        )
        for t in PER_COMPETITOR_TABLES:
            if t in sizes:
                lines.append(
                    f"  per competitor ({competitors}; not per result: updated in place by every rating "
                    f"round): {t} {kib(total(sizes[t]), competitors)} KiB"
                )
    after = disk["in_use_after_vacuum"]
    if after:
        per_index = sorted(
            (
                (k, v["indexes"])
                for k, v in after.items()
                if "." in k and k.split(".")[0] in PER_RESULT_TABLES
            ),
            key=lambda kv: -kv[1],
        )
        lines.append(
            "  indexes after VACUUM, bytes per result: "
            + ", ".join(f"{k.split('.')[1]} {b / max(n, 1):.0f}" for k, b in per_index)
        )
    return lines


def statement_table(title: str, phases: dict[str, dict[str, float]], n: int, top: int = 8) -> list[str]:
    """Lines of the ``top`` statements by total time: calls per result, ms per call, phase and shape."""
    rows = sorted(
        ((k[len(SQL_PREFIX) :], v) for k, v in phases.items() if k.startswith(SQL_PREFIX)),
        key=lambda kv: -kv[1]["seconds"],
    )[:top]
    lines = [title, f"  {'total s':>8s} {'per result':>10s} {'ms/call':>8s}  phase | statement"]
    for key, v in rows:
        per_call = 1000 * v["seconds"] / max(v["calls"], 1)
        lines.append(f"  {v['seconds']:8.2f} {v['calls'] / max(n, 1):10.2f} {per_call:8.2f}  {key}")
    return lines


def phase_table(title: str, phases: dict[str, dict[str, float]], n: int, wall: float) -> list[str]:
    """Lines of a per-phase table: calls, total s, ms per call, ms and SQL per result, share of wall."""
    phases = {k: v for k, v in phases.items() if not k.startswith(SQL_PREFIX)}
    lines = [
        f"{title}",
        f"  {'phase':44s} {'calls':>7s} {'total s':>8s} {'ms/call':>8s} {'ms/result':>9s} "
        f"{'SQL/call':>8s} {'SQL/result':>10s}",
    ]
    for name, v in sorted(phases.items(), key=lambda kv: -kv[1]["seconds"]):
        calls = max(v["calls"], 1)
        lines.append(
            f"  {name:44s} {int(v['calls']):7d} {v['seconds']:8.2f} {1000 * v['seconds'] / calls:8.2f} "
            f"{1000 * v['seconds'] / max(n, 1):9.3f} {v['sql'] / calls:8.2f} {v['sql'] / max(n, 1):10.2f}"
        )
    return lines


def main() -> int:
    args = parse_args()
    if args.role == "rater":
        rater_main(args)
        return 0
    run_id = uuid.uuid4().hex[:10]
    data_dir = tempfile.mkdtemp(prefix="bench-cp-")
    env = process_env(args, run_id, data_dir)
    os.environ.update(env)
    rng = random.Random(20261124)
    print(
        f"config: {args.duels} ten-match duels, {args.workers} worker processes, {args.raters} rater "
        f"processes (Celery prefork), {args.games} game(s) x {args.competitors} competitors, "
        f"error share {args.error_share}, {args.heartbeats} heartbeat(s) and {args.live_writes} live match "
        f"store(s) per duel, history {args.history} rated duels, tie-fit delay "
        f"{args.tie_fit_delay} s, DATABASE_CONN_MAX_AGE={args.conn_max_age}, "
        f"experiments: {', '.join(args.experiment) or 'none'}, db {args.db}, "
        f"redis {args.redis}, {os.cpu_count()} cores",
        flush=True,
    )
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    t_setup = time.perf_counter()
    recreate_database(args, env)
    setup_django(run_id)
    empty = table_bytes()  # the migrated, empty tables: a result's duel row is counted from its insert
    envs, duels = seed(args, rng)
    pools = {slug: real_duels(slug, args.pool) for slug in envs.values()}
    pool_file = Path(data_dir) / "duel_pool.json"
    pool_file.write_text(json.dumps(pools))
    sizes = [len(json.dumps(d)) for p in pools.values() for d in p["clean"]]
    moves = [len(m["actions"]) for p in pools.values() for d in p["clean"] for m in d["matches"]]
    print(
        f"duel JSONs: {sum(len(p['clean']) for p in pools.values())} real ones per game (schema-valid), "
        f"{sum(sizes) / len(sizes) / 1024:.1f} KiB each on average, {sum(moves) / len(moves):.1f} moves "
        f"per match (actions, move_times and the states the rules cannot replay stored per match)",
        flush=True,
    )
    r = redis_client(args.redis)
    key = f"bench-cp-{run_id}:duels"
    r.delete(key)
    for i in range(0, len(duels), 1000):
        r.rpush(key, *[d for d, _ in duels[i : i + 1000]])

    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    rater = subprocess.Popen(
        [sys.executable, __file__, "--role", "rater", "--run-id", run_id, *sys.argv[1:]],
        cwd=REPO,
        env={**os.environ, **env},
        start_new_session=True,
        stdout=sys.stderr,  # Celery's banner and shutdown notes; the report alone goes to stdout
    )
    ctx = mp.get_context("spawn")
    start, out, warm = ctx.Event(), ctx.Queue(), ctx.Queue()
    procs = [
        ctx.Process(
            target=worker_main, args=(args, run_id, env, str(pool_file), start, out, warm), daemon=True
        )
        for _ in range(args.workers)
    ]
    code, rate = 1, 0.0
    try:
        for p in procs:
            p.start()
        deadline = time.monotonic() + 120
        while not r.get(f"bench-cp-{run_id}:rater:ready"):
            if rater.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the rating worker did not start")
            time.sleep(0.1)
        for _ in procs:  # every worker recorded its warm-up duel (imports, connection, rules)
            warm.get(timeout=300)
        first_id = min(d for d, _ in duels)
        warmed = len(duels) - int(r.llen(key))
        wait_rated(first_id, warmed, time.perf_counter(), 120, lambda: "")  # their ratings too
        time.sleep(1.0)  # the rater's last task reports its phases after its commit
        r.delete(f"bench-cp-{run_id}:rater")  # the rater's phases and counters: the window's only
        print(
            f"setup {time.perf_counter() - t_setup:.1f} s ({warmed} warm-up duels recorded and rated, "
            f"not measured); measuring {len(duels) - warmed}...",
            flush=True,
        )
        (pg0, rater0, main0, redis0), (busy0, all0) = cpu_seconds(rater.pid), machine_busy_seconds()
        t0 = time.perf_counter()
        start.set()

        def healthy() -> str:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                return f"{len(dead)} worker process(es) died (exit codes {dead})"
            return "" if rater.poll() is None else f"the rating worker exited ({rater.returncode})"

        recorded_s, rated_s = wait_rated(first_id, len(duels), t0, args.timeout, healthy)
        (pg1, rater1, main1, redis1), (busy1, all1) = cpu_seconds(rater.pid), machine_busy_seconds()
        left_in_queue = r.llen(env["CELERY_QUEUE"])  # triggers not consumed yet when the last duel was rated
        load = os.getloadavg()
        workers = [out.get(timeout=60) for p in procs if p.exitcode in (None, 0)]
        for p in procs:
            p.join(timeout=30)
        rater_phases, counters = read_rater_stats(r, run_id)
        counters["rater_main_cpu_s"] = main1 - main0
        counters["redis_cpu_s"] = redis1 - redis0
        counters["left_in_queue"] = left_in_queue
        grown = {
            t: {part: b - empty.get(t, {}).get(part, 0.0) for part, b in parts.items()}
            for t, parts in table_bytes().items()
        }
        disk = {"grown": grown, "in_use_after_vacuum": bytes_in_use_after_vacuum()}
        code, rate = report(
            args, duels, workers, rater_phases, counters, rater1 - rater0, recorded_s, rated_s, load,
            pg1 - pg0, busy1 - busy0, all1 - all0, disk, warmed,
        )  # fmt: skip
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
        with contextlib.suppress(ProcessLookupError):
            rater.send_signal(signal.SIGTERM)  # Celery's warm shutdown: children finish their task
        try:
            rater.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(rater.pid, signal.SIGKILL)
            rater.wait()
        for p in procs:
            if p.is_alive():
                p.kill()
        for k in r.scan_iter(f"bench-cp-{run_id}*"):
            r.delete(k)
        for k in r.scan_iter(f"_kombu.binding.bench-cp-{run_id}*"):
            r.delete(k)
        if args.keep:
            print(f"kept database {args.db}", flush=True)
        else:
            drop_database(args)
    print(f"results/s: {rate:.1f}")
    return code


def report(
    args: argparse.Namespace,
    duels: list[tuple[int, str]],
    workers: list[dict[str, Any]],
    rater_phases: dict[str, dict[str, float]],
    counters: dict[str, float],
    rater_cpu: float,
    recorded_s: float | None,
    rated_s: float | None,
    load: tuple[float, float, float],
    pg_cpu: float,
    busy: float,
    total_cpu: float,
    disk: dict[str, Any],
    warmed: int = 0,
) -> tuple[int, float]:
    """Print the results; returns the exit code (1 if a duel was not recorded and rated exactly once) and
    the results per second (0 then). Rates, phases and CPU are per measured result (``warmed`` warm-up
    duels, recorded and rated before the window, left out); disk and the exactly-once check count all."""
    total = len(duels)
    n = total - warmed
    v = verify(min(d for d, _ in duels), total)
    problems = exactly_once(v)
    worker_phases: dict[str, dict[str, float]] = {}
    for w in workers:
        merge(worker_phases, w["phases"])
    worker_cpu = sum(w["cpu_s"] for w in workers)
    wall = rated_s or args.timeout
    print()
    outcomes: dict[str, int] = {}
    for w in workers:
        for k, c in w["outcomes"].items():
            outcomes[k] = outcomes.get(k, 0) + c
    print(
        f"recorded: {v['finished']} duels ({warmed} of them warm-up duels before the window), the {n} "
        f"measured in {recorded_s or float('nan'):.2f} s ({n / recorded_s if recorded_s else 0:.1f}/s); "
        f"run_job outcomes {json.dumps(outcomes)}"
    )
    print(f"rated:    {v['rated']} duels, the {n} measured all rated after {wall:.2f} s ({n / wall:.1f}/s)")
    tasks = int(counters.get("batches", 0) + counters.get("empty", 0))
    print(
        f"rating tasks: {tasks} run for {n} hints; {int(counters.get('batches', 0))} rated a batch "
        f"(mean {counters.get('rated', 0) / max(counters.get('batches', 1), 1):.1f} duels), "
        f"{int(counters.get('empty', 0))} rated nothing (a run in progress took their duels, or none left); "
        f"{int(counters.get('left_in_queue', 0))} still queued when the last duel was rated (work to come)"
    )
    print()
    for line in phase_table(
        "worker side (sum over workers; SQL on the worker's connection):", worker_phases, n, wall
    ):
        print(line)
    print()
    for line in phase_table(
        "rater side (Celery worker; tasks include Celery and connection overhead):", rater_phases, n, wall
    ):
        print(line)
    print()
    for side, phases in (("worker", worker_phases), ("rater", rater_phases)):
        print("\n".join(statement_table(f"slowest statements, {side} side (wall time):", phases, n)))
    print()
    pg_own_workers = sum(w["pg_cpu_s"] for w in workers)
    pg_own_raters = counters.get("pg_cpu_s", 0.0)
    per = 1000 / max(n, 1)
    print(
        f"CPU over the window ({wall:.1f} s, {total_cpu:.1f} core-s on this machine): busy {busy:.1f} core-s "
        f"({100 * busy / max(total_cpu, 1e-9):.0f} %, other users included)"
    )
    print("  CPU per result, ms:")
    print(
        f"    PostgreSQL backends of the bench's connections: {per * (pg_own_workers + pg_own_raters):6.2f} "
        f"(workers' {per * pg_own_workers:.2f}, raters' {per * pg_own_raters:.2f}); every postgres process "
        f"of this shared server: {per * pg_cpu:.2f}"
    )
    print(f"    simulated workers (Python, on worker machines in production): {per * worker_cpu:6.2f}")
    print(
        f"    Redis server (broker and cache; shared, other users included): "
        f"{per * counters.get('redis_cpu_s', 0.0):6.2f}"
    )
    main = counters.get("rater_main_cpu_s", 0.0)
    print(
        f"    rating Celery worker (process tree): {per * rater_cpu:6.2f} (main process, taking messages "
        f"from Redis: {per * main:.2f}; pool processes running the tasks: {per * (rater_cpu - main):.2f})"
    )
    control_ms = per * (pg_own_workers + pg_own_raters + counters.get("redis_cpu_s", 0.0) + rater_cpu)
    print(
        f"  control plane (the bench's PostgreSQL backends + the rating worker + Redis): {control_ms:.2f} ms "
        f"of CPU per result, so at most {1000 / max(control_ms, 1e-9):.0f} results/s per core of its host "
        f"(results/s above also pays the simulated workers' {per * worker_cpu:.2f} ms on the same cores)"
    )
    for line in disk_lines(disk, total, args.games * args.competitors):
        print(line)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in load)}")
    print(f"exactly once: {'ok' if not problems else 'FAILED: ' + '; '.join(problems)} ({json.dumps(v)})")
    rate = n / rated_s if rated_s and not problems else 0.0
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "results_per_s": rate,
                    "recorded_s": recorded_s,
                    "rated_s": rated_s,
                    "verify": v,
                    "problems": problems,
                    "worker_phases": worker_phases,
                    "rater_phases": rater_phases,
                    "rater_counters": counters,
                    "control_plane_ms_per_result": control_ms,
                    "cpu": {
                        "postgres_all": pg_cpu,
                        "postgres_workers": pg_own_workers,
                        "postgres_raters": pg_own_raters,
                        "workers": worker_cpu,
                        "raters": rater_cpu,
                        "busy": busy,
                    },
                    "load": load,
                    "disk": disk,
                },
                indent=1,
            )
        )
    return (0 if not problems and rated_s else 1), rate


if __name__ == "__main__":
    sys.exit(main())
