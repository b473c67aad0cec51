"""The whole loop, matchmaking -> duel -> record -> rating -> matchmaking, with real workers: ladder duels
per minute and worker slot utilisation against the same workers' direct-queue figure.

    .venv/bin/python benchmarks/bench_ladder_loop.py [--competitors 200] [--workers 1,2,4]
        [--seconds 60] [--direct 40] [--warmup 10] [--no-control-queue] [--backlog 1000] [--keep]

What runs is what a deployment runs, with the settings of ``example.env`` (``ENV_FILE``; only the
addresses, the queue name and ``SANDBOX=docker`` set here): a PostgreSQL database (``--db``, created and
migrated, dropped at the end unless ``--keep``), Redis as the broker, one ``celery beat`` (the periodic
matchmaking every ``TM_MATCHMAKE_INTERVAL_SECONDS``, the reaper), and real Celery workers playing in warm
Docker sandboxes (``DUEL_SANDBOX_REUSE=on``). The ladder: Connect Four, ``--competitors`` competitors
(each its own revision of the random example player, built like a submission), ten-match duels (the
lengths matchmaking chooses from the cost model).

Per size W of ``--workers``, W worker processes: 1 and 2 are one worker with 1 or 2 prefork processes on
the machine's engine; 4 are two workers of 2 processes, one on the machine's engine and one on a private
engine of its own (``scripts/start_docker_node.sh``: what a second worker machine has; the agent image is
copied into it, the base images built by ``scripts/build_base_image.sh``). For each size:

1. **direct**: the workers started with ``TM_LADDER_QUEUE_TARGET=0`` (no ladder); ``--warmup`` x W untimed
   then ``--direct`` x W timed ten-match duels queued straight through ``core.actions.schedule_duel``
   (what ``bench_duel_worker.py`` measures, same machine, same run): duels per minute;
2. **ladder**: the workers restarted with the queue target from the live capacity (``TM_LADDER_QUEUE_TARGET``
   unset: ``TM_LADDER_SLOT_FACTOR`` x the slots the workers report), the beat started, nothing queued by
   the benchmark: after ``--warmup`` x W ladder duels finished, a window of ``--seconds`` (database
   clock): ladder duels finished in it per minute (and their matches: ladder duels have the lengths
   the cost model chooses, 2 to 16 matches, direct ones 10), and the **slot utilisation**: the seconds
   the window's duels held a worker slot (``started_at``..``finished_at``, clipped to the window) over
   W x the window.

Rating tasks, matchmaking and the reaper run on a queue and consumer of their own (``CONTROL_QUEUE``, one
process), as every shipped deployment runs them (docker-compose's ``control`` service, terraform,
``./prepare_dev.sh``); ``--no-control-queue`` measures ``example.env``'s bare default instead, where they
share the workers' queue and slots.

Then, unless ``--backlog 0``, **the reaper behind a backlog**: one job worker of one process (plus the
control consumer and beat), a long ladder duel claimed, the worker stopped with SIGSTOP mid-duel (a frozen
VM: no heartbeat, its messages held), ``--backlog`` job hints queued behind it; printed: the seconds from
the stop to the duel's re-queue and from its lease's end (database clock) to the re-queue, against the
goal ``LEASE_SECONDS`` + 10 s, and whether the backlog moved meanwhile.

Prints the load average before and after each phase (the machine is shared; compare figures of the same
run). Last line: ``ladder duels/min: N at W workers (utilisation U%)`` for the largest W.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_db import drop_database, recreate_database  # noqa: E402 (after the path set-up)
from bench_duel_worker import MATCHES, check, load, play, seed  # noqa: E402

GAME = "connect-four"
NODE_SCRIPT = REPO / "scripts" / "start_docker_node.sh"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--competitors", type=int, default=200)
    p.add_argument("--workers", default="1,2,4", help="worker process counts: 1, 2 and/or 4")
    p.add_argument("--seconds", type=float, default=60.0, help="timed ladder window per size")
    p.add_argument("--direct", type=int, default=40, help="timed direct duels per worker process")
    p.add_argument("--warmup", type=int, default=10, help="untimed duels per worker process, per phase")
    p.add_argument(
        "--no-control-queue",
        dest="control_queue",
        action="store_false",
        help="example.env's bare default: ratings, matchmaking and the reaper share the workers' queue",
    )
    p.add_argument("--backlog", type=int, default=1000, help="job hints behind a stalled worker (0: skip)")
    p.add_argument("--image", help="agent image to play (default: build example_players/random)")
    p.add_argument("--node", default="ll-bench-b", help="name of the second engine (4 workers)")
    p.add_argument("--pg", default=os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432"))
    p.add_argument("--db", default="rl_arena_bench_ladder_loop")
    p.add_argument("--redis", default=os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/3"))
    p.add_argument("--keep", action="store_true", help="keep the database")
    return p.parse_args()


def process_env(args: argparse.Namespace, run_id: str, data_dir: str) -> dict[str, str]:
    """Settings of every process: ``example.env``, the addresses and queue names of this run."""
    env = {
        "ENV_FILE": str(REPO / "example.env"),
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": f"{args.pg}/{args.db}",
        "REDIS_URL": args.redis,
        "CELERY_BROKER_URL": args.redis,
        "CELERY_QUEUE": f"bench-ll-{run_id}",
        "DATA_DIR": data_dir,
        "SANDBOX": "docker",
        "DUEL_SANDBOX_REUSE": "on",
        "TM_CHECK_EDITIONS_INTERVAL_SECONDS": "86400",  # no tournament editions: the ladder alone
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-ladder-loop-" + "x" * 40,
        "DEBUG": "0",
        "LOG_LEVEL": "warning",
        "CELERY_SKIP_CHECKS": "1",
    }
    if args.control_queue:
        env["CONTROL_QUEUE"] = f"bench-ll-ctl-{run_id}"
    return env


def start_node(name: str, image: str) -> str:
    """The second engine, its base images and the agent image; returns its DOCKER_HOST."""
    host = subprocess.run(
        ["bash", str(NODE_SCRIPT), name], check=True, capture_output=True, text=True
    ).stdout.splitlines()[-1]
    subprocess.run(
        ["bash", str(REPO / "scripts" / "build_base_image.sh"), "python"],
        check=True,
        env={**os.environ, "DOCKER_HOST": host},
        stdout=subprocess.DEVNULL,
    )
    save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
    subprocess.run(
        ["docker", "-H", host, "load", "-q"], stdin=save.stdout, check=True, stdout=subprocess.DEVNULL
    )
    save.wait()
    return host


def start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = open(log, "ab")  # noqa: SIM115 - kept open for the process's life
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        env={**os.environ, **env},
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def start_worker(
    env: dict[str, str], name: str, processes: int, host: str | None, runtime: Path, queues: str, log: Path
) -> subprocess.Popen[bytes]:
    runtime.mkdir(parents=True, exist_ok=True)
    worker_env = {**env, "WORKER_CONCURRENCY": str(processes), "AGENT_RUNTIME_DIR": str(runtime)}
    if host:
        worker_env["DOCKER_HOST"] = host
    cmd = [sys.executable, "-m", "celery", "-A", "core", "worker", "--queues", queues]
    cmd += ["--concurrency", str(processes), "--pool", "prefork", "--hostname", f"{name}@%h"]
    cmd += ["--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    return start(cmd, worker_env, log)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Warm shutdown (running tasks finish, warm containers removed), SIGKILL after 120 s."""
    group = os.getpgid(process.pid)
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(group, signal.SIGKILL)
        process.wait()


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


class Fleet:
    """W worker processes (one or two workers), started for one phase."""

    def __init__(self, args: argparse.Namespace, env: dict[str, str], data_dir: str, node_host: str | None):
        self.args, self.env, self.data_dir, self.node_host = args, env, Path(data_dir), node_host
        self.processes: list[subprocess.Popen[bytes]] = []

    def start(self, size: int, phase: str, extra: dict[str, str]) -> None:
        env = {**self.env, **extra}
        layout = [(size, None)] if size <= 2 else [(2, None), (size - 2, self.node_host)]
        queue = env["CELERY_QUEUE"]
        for k, (processes, host) in enumerate(layout):
            name = f"ll{size}{phase}{k}-{uuid.uuid4().hex[:4]}"
            runtime = Path(tempfile.mkdtemp(prefix="llrt-", dir="/tmp"))
            log = self.data_dir / f"{name}.log"
            self.processes.append(start_worker(env, name, processes, host, runtime, queue, log))
        if "CONTROL_QUEUE" in env:
            name = f"llctl{size}{phase}-{uuid.uuid4().hex[:4]}"
            runtime = Path(tempfile.mkdtemp(prefix="llrt-", dir="/tmp"))
            log = self.data_dir / f"{name}.log"
            self.processes.append(start_worker(env, name, 1, None, runtime, env["CONTROL_QUEUE"], log))
        from core.jobs.health import live_slots

        wait_for(lambda: live_slots(queue) >= size, 180, f"{size} healthy worker slots")

    def beat(self, extra: dict[str, str]) -> None:
        env = {**self.env, **extra}
        schedule = self.data_dir / f"beat-{uuid.uuid4().hex[:6]}"
        cmd = [sys.executable, "-m", "celery", "-A", "core", "beat", "--loglevel", "WARNING"]
        cmd += ["--schedule", str(schedule)]
        self.processes.append(start(cmd, env, self.data_dir / "beat.log"))

    def stop(self) -> None:
        for process in self.processes:
            stop(process)
        self.processes = []
        from core.models import WorkerStatus

        WorkerStatus.objects.update(stopped=True)  # the next phase counts only its own workers
        from run_duel.api import reap_orphans

        reap_orphans(max_age_s=6 * 3600)


def direct(fleet: Fleet, size: int, revisions: list[int], rng: random.Random) -> float:
    """Duels per minute queued straight to ``size`` worker processes."""
    fleet.start(size, "d", {"TM_LADDER_QUEUE_TARGET": "0"})
    try:
        play(revisions, fleet.args.warmup * size, rng, timeout=900)
        seconds, ids = play(revisions, fleet.args.direct * size, rng, timeout=1800)
    finally:
        fleet.stop()
    problem = check(ids)
    if problem:
        raise SystemExit(f"direct, {size} workers: {problem}")
    return fleet.args.direct * size / seconds * 60


def ladder(fleet: Fleet, size: int) -> tuple[float, float, int, int, float]:
    """(ladder duels per minute, slot utilisation, duels of the window, ratings pending at its end,
    matches per minute)."""
    from django.db.models import Q

    from core.actions.jobs import database_time
    from core.models import Duel

    def ladder_finished() -> int:
        return Duel.objects.filter(kind=Duel.Kind.LADDER, state=Duel.State.FINISHED).count()

    before = ladder_finished()
    fleet.start(size, "l", {})
    fleet.beat({})
    try:
        wait_for(lambda: ladder_finished() - before >= fleet.args.warmup * size, 900, "warm-up ladder duels")
        t0 = database_time()
        time.sleep(fleet.args.seconds)
        t1 = database_time()
        window = (t1 - t0).total_seconds()
        window_duels = Duel.objects.filter(kind=Duel.Kind.LADDER, finished_at__gt=t0, finished_at__lte=t1)
        finished = window_duels.count()
        matches = sum(window_duels.values_list("num_matches", flat=True))
        held = Duel.objects.filter(started_at__lt=t1).filter(
            Q(finished_at__gt=t0) | Q(finished_at__isnull=True)
        )
        busy = 0.0
        for started, ended in held.values_list("started_at", "finished_at"):
            busy += max(0.0, (min(ended or t1, t1) - max(started, t0)).total_seconds())
        pending = Duel.objects.filter(state=Duel.State.FINISHED, rated=False).count()
    finally:
        fleet.stop()
    failed = Duel.objects.filter(kind=Duel.Kind.LADDER, state=Duel.State.FAILED).count()
    if failed:
        raise SystemExit(f"ladder, {size} workers: {failed} ladder duels FAILED")
    return finished / window * 60, busy / (size * window), finished, pending, matches / window * 60


def reaper_behind_backlog(fleet: Fleet, revisions: list[int], backlog: int) -> tuple[float, float, int, int]:
    """(seconds from the stop to the re-queue, seconds from the lease's end to the re-queue, hints waiting
    when the stop began, hints waiting at the re-queue) for one job worker stopped mid-duel behind
    ``backlog`` hints."""
    from core.actions import schedule_duel
    from core.actions.jobs import database_time
    from core.models import Duel
    from core.queue import broker_queue_size, send_task

    fleet.start(1, "r", {"TM_LADDER_QUEUE_TARGET": "0"})
    fleet.beat({"TM_LADDER_QUEUE_TARGET": "0"})
    job_worker = fleet.processes[0]  # Fleet.start starts the job workers first, then the control consumer
    queue = fleet.env["CELERY_QUEUE"]
    try:
        # A challenge plays every match (no early stop): long enough to be stopped in the middle of it.
        duel = schedule_duel(revisions[0], revisions[1], kind=Duel.Kind.CHALLENGE, num_matches=5000)
        wait_for(
            lambda: Duel.objects.get(pk=duel.pk).state == Duel.State.RUNNING, 300, "the long duel's claim"
        )
        time.sleep(1.0)  # a heartbeat or two: the lease is renewed, the duel is in play
        os.killpg(os.getpgid(job_worker.pid), signal.SIGSTOP)
        stopped_at = database_time()
        try:
            for n in range(backlog):  # hints of duels that do not exist: each would be a no-op
                send_task(Duel.task_name, 10**9 + n)
            waiting_before = broker_queue_size(queue) or 0
            row = Duel.objects.get(pk=duel.pk)
            if row.state != Duel.State.RUNNING:
                raise SystemExit(f"reaper phase: the long duel was {row.state} when its worker stopped")
            wait_for(
                lambda: Duel.objects.get(pk=duel.pk).state == Duel.State.QUEUED,
                600,
                "the stalled duel's re-queue",
            )
            requeued_at = database_time()
            waiting_after = broker_queue_size(queue) or 0
            lease_end = row.lease_expires_at  # the last lease renewed before the stop (a re-queue clears it)
        finally:
            os.killpg(os.getpgid(job_worker.pid), signal.SIGCONT)
        Duel.objects.filter(pk=duel.pk, state=Duel.State.QUEUED).update(state=Duel.State.FAILED)
    finally:
        fleet.stop()
    return (
        (requeued_at - stopped_at).total_seconds(),
        (requeued_at - lease_end).total_seconds() if lease_end else float("nan"),
        waiting_before,
        waiting_after,
    )


def main() -> int:
    args = parse_args()
    sizes = [int(s) for s in args.workers.split(",") if s.strip()]
    if not sizes or set(sizes) - {1, 2, 4}:
        raise SystemExit("--workers takes 1, 2 and/or 4")
    run_id = uuid.uuid4().hex[:8]
    data_dir = tempfile.mkdtemp(prefix="bench-ladder-loop-")
    env = process_env(args, run_id, data_dir)
    os.environ.update(env)
    if args.image:
        image = args.image
    else:
        from agent_images import build_random_image

        image = build_random_image()
    recreate_database(args, env)
    import django

    django.setup()
    node_host = start_node(args.node, image) if 4 in sizes else None
    revisions = seed(args.competitors, image)
    rng = random.Random(20261128)
    cores = len(os.sched_getaffinity(0))
    print(
        f"ladder of {args.competitors} Connect Four competitors (the random player), example.env's settings, "
        f"{'ratings and matchmaking on their own queue' if args.control_queue else 'CONTROL_QUEUE empty'}, "
        f"{cores} cores (shared), load average {load()}",
        flush=True,
    )
    fleet = Fleet(args, env, data_dir, node_host)
    results: dict[int, tuple[float, float]] = {}
    try:
        for size in sizes:
            load0 = load()
            rate_direct = direct(fleet, size, revisions, rng)
            load1 = load()
            rate, used, n, pending, matches = ladder(fleet, size)
            results[size] = (rate, used)
            print(
                f"  {size} worker process(es){' (two engines)' if size == 4 else ''}: "
                f"ladder {rate:7.1f} duels/min ({n} in {args.seconds:g} s), slot utilisation {used:5.1%}, "
                f"{matches:.0f} matches/min, {pending} results waiting for their rating at the end; direct "
                f"queue {rate_direct:7.1f} duels/min ({rate_direct * MATCHES:.0f} matches/min); "
                f"ladder / direct {rate / rate_direct:.2f} in duels, "
                f"{matches / (rate_direct * MATCHES):.2f} in matches.  "
                f"load average: before {load0}, "
                f"after direct {load1}, after ladder {load()}",
                flush=True,
            )
        if args.backlog:
            from django.conf import settings

            load0 = load()
            since_stop, since_lease, before, after = reaper_behind_backlog(fleet, revisions, args.backlog)
            print(
                f"  the reaper behind {args.backlog} hints (one job worker stopped mid-duel): re-queued "
                f"{since_stop:.1f} s after the stop, {since_lease:.1f} s after its lease ended (goal: "
                f"within LEASE_SECONDS + 10 = {settings.LEASE_SECONDS + 10} s of the stop); hints waiting "
                f"{before} at the stop, {after} at the re-queue.  "
                f"load average: before {load0}, after {load()}",
                flush=True,
            )
    finally:
        fleet.stop()
        if node_host:
            subprocess.run(["bash", str(NODE_SCRIPT), args.node, "--purge"], check=False)
        if not args.keep:
            drop_database(args)
    size = max(results)
    rate, used = results[size]
    print(f"ladder duels/min: {rate:.0f} at {size} workers (utilisation {used:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
