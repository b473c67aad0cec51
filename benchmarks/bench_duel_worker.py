"""Duels per minute through the real worker path, warm sandboxes against a fresh container per seat.

    .venv/bin/python benchmarks/bench_duel_worker.py [--duels 120] [--revisions 6] [--concurrency 2]
        [--modes warm,cold] [--image IMAGE] [--keep]

What runs is what the platform runs: a PostgreSQL database (``--db``, created and migrated here, dropped
at the end unless ``--keep``) holding ``--revisions`` ELIGIBLE revisions of Connect Four (each a
competitor of its own, all playing the random example player's image, built like a submission), and for
each mode one real Celery worker (``celery -A core worker``, ``--concurrency`` prefork processes, a queue
private to the run, Redis as the broker) with ``SANDBOX=docker`` and ``DUEL_SANDBOX_REUSE`` on (``warm``)
or off (``cold``). Ten-match ladder duels between random pairs of revisions are queued one by one through
``core.actions.schedule_duel`` (enqueued on commit, as the matchmaker does); the worker claims, plays
(referee + Docker sandbox), records each result (``record_duel_result``) and runs the rating tasks it
triggers, on the same queue.

Per mode: ``--warmup`` duels first (the worker starts, images are checked, warm containers made), then
``--duels`` duels timed from the first ``schedule_duel`` to the last duel FINISHED. Prints duels per
minute, the load average before and after each mode (the machine is shared: compare modes of the same
run), and fails if any duel ended FAILED or had a match lost on our side. The last line is
``duels/min: N`` for the first mode.
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

GAME = "connect-four"
MATCHES = 10


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--duels", type=int, default=120, help="timed duels per mode")
    p.add_argument("--warmup", type=int, default=12, help="untimed duels per mode first")
    p.add_argument("--revisions", type=int, default=6)
    p.add_argument("--concurrency", type=int, default=2, help="prefork processes of the worker")
    p.add_argument("--modes", default="warm,cold", help="comma-separated: warm (reuse on), cold (off)")
    p.add_argument("--image", help="agent image to play (default: build example_players/random)")
    p.add_argument("--pg", default=os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432"))
    p.add_argument("--db", default="rl_arena_bench_duel_worker")
    p.add_argument("--redis", default=os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/2"))
    p.add_argument("--keep", action="store_true", help="keep the database")
    return p.parse_args()


def process_env(args: argparse.Namespace, run_id: str, data_dir: str) -> dict[str, str]:
    """What the bench and its worker read their settings from."""
    return {
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": f"{args.pg}/{args.db}",
        "REDIS_URL": args.redis,
        "CELERY_BROKER_URL": args.redis,
        "CELERY_QUEUE": f"bench-dw-{run_id}",
        "DATA_DIR": data_dir,
        "SANDBOX": "docker",
        "WORKER_CONCURRENCY": str(args.concurrency),
        "TM_LADDER_QUEUE_TARGET": "0",  # the bench schedules every duel itself
        "TM_CHECK_EDITIONS_INTERVAL_SECONDS": "86400",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "bench-duel-worker-" + "x" * 40,
        "DEBUG": "0",
        "LOG_LEVEL": "warning",
        "CELERY_SKIP_CHECKS": "1",
    }


def seed(revisions: int, image: str) -> list[int]:
    """Connect Four, one user, ``revisions`` competitors with an ELIGIBLE revision playing ``image``."""
    from core.actions import sync_environments
    from core.management.commands.sync_environments import game_infos
    from core.models import Competitor, Environment, Revision, User

    sync_environments(game_infos())
    env = Environment.objects.get(slug=GAME)
    user = User.objects.create(email="bench@duel-worker.example", display_name="Bench", password="!")
    ids = []
    for i in range(revisions):
        competitor = Competitor.objects.create(
            owner=user, environment=env, name=f"random-{i}", is_public=True, next_version=2
        )
        revision = Revision.objects.create(
            competitor=competitor,
            version=1,
            state=Revision.State.ELIGIBLE,
            agent_ref=image,
            zip_path=f"submissions/{competitor.pk}/1.zip",
            content_hash=f"{i:064x}",
        )
        competitor.current_revision = revision
        competitor.save(update_fields=["current_revision"])
        ids.append(revision.pk)
    return ids


def start_worker(env: dict[str, str], reuse: bool, name: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "celery", "-A", "core", "worker", "--queues", env["CELERY_QUEUE"]]
    cmd += ["--concurrency", env["WORKER_CONCURRENCY"], "--pool", "prefork", "--hostname", f"{name}@%h"]
    cmd += ["--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"]
    worker_env = {**os.environ, **env, "DUEL_SANDBOX_REUSE": "on" if reuse else "off"}
    return subprocess.Popen(cmd, cwd=REPO, env=worker_env, start_new_session=True)


def stop_worker(worker: subprocess.Popen[bytes]) -> None:
    """Warm shutdown (its processes remove their warm containers), then the reaper for anything left."""
    from run_duel.sandbox.docker import reap_orphans

    group = os.getpgid(worker.pid)
    worker.send_signal(signal.SIGTERM)  # the main process: it lets running tasks finish
    try:
        worker.wait(120)
    except subprocess.TimeoutExpired:
        os.killpg(group, signal.SIGKILL)
        worker.wait()
    reap_orphans(max_age_s=6 * 3600)


def play(revisions: list[int], n: int, rng: random.Random, timeout: float) -> tuple[float, list[int]]:
    """Queue ``n`` ladder duels through ``core.actions``; wait until all ended. Returns the seconds from
    the first enqueue to the last end, and the duel ids."""
    from core.actions import schedule_duel
    from core.models import Duel

    t0 = time.perf_counter()
    ids = [schedule_duel(*rng.sample(revisions, 2), num_matches=MATCHES).pk for _ in range(n)]
    deadline = time.monotonic() + timeout
    while True:
        done = Duel.objects.filter(pk__in=ids, state__in=[Duel.State.FINISHED, Duel.State.FAILED]).count()
        if done == n:
            return time.perf_counter() - t0, ids
        if time.monotonic() > deadline:
            raise SystemExit(f"only {done} of {n} duels ended within {timeout:g} s")
        time.sleep(0.05)


def check(ids: list[int]) -> str:
    """ "" when every duel FINISHED without a match lost on our side, else what went wrong."""
    from core.models import Duel

    duels = Duel.objects.filter(pk__in=ids)
    failed = duels.filter(state=Duel.State.FAILED).count()
    ours = sum(duels.values_list("other_errors", flat=True))
    players = sum(
        d.player_1_errors + d.player_2_errors for d in duels.only("player_1_errors", "player_2_errors")
    )
    if failed or ours or players:
        return f"{failed} FAILED, {ours} matches lost on our side, {players} player errors"
    return ""


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as handle:
        data = handle.read()
    return data[data.rindex(")") + 2 :].split()


def process_tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant, plus the children it already reaped."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parents[int(name)] = int(_stat(int(name))[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid]
        tree.update(children)
        frontier.extend(children)
    total = 0
    for pid in tree:
        try:
            fields = _stat(pid)
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:13])  # utime, stime
        if pid == root:
            total += sum(int(x) for x in fields[13:15])  # cutime, cstime
    return total / tick


def engine_pids() -> list[int]:
    """dockerd and containerd (shared with everything else using the engine on this machine)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/comm") as handle:
                    if handle.read().strip() in ("dockerd", "containerd"):
                        found.append(int(name))
            except OSError:
                continue
    return found


def warm_agents_cpu() -> float:
    """CPU seconds of every warm container on the engine (their cgroups; cgroup v1 with the cgroupfs
    driver): the agents' and factories' CPU while the containers live (0 when unreadable)."""
    from run_duel.sandbox.docker_client import get_client

    total = 0
    for summary in get_client().api.containers(filters={"label": "rl-arena.warm=1"}):
        try:
            with open(f"/sys/fs/cgroup/cpuacct/docker/{summary['Id']}/cpuacct.usage") as handle:
                total += int(handle.read())
        except (OSError, ValueError):
            continue
    return total / 1e9


def postgres_cpu(database: str) -> float:
    """CPU seconds of the PostgreSQL backends connected to ``database`` (live ones)."""
    total = 0.0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    if f" {database} ".encode() not in handle.read().replace(b"\0", b" ") + b" ":
                        continue
                total += process_tree_cpu(int(name))
            except OSError:
                continue
    return total


def machine_busy() -> float:
    """CPU seconds all cores spent busy since boot (every process of the machine)."""
    with open("/proc/stat") as handle:
        values = [int(x) for x in handle.readline().split()[1:]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    args = parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"warm", "cold"}:
        raise SystemExit("--modes takes warm and/or cold")
    run_id = uuid.uuid4().hex[:8]
    data_dir = tempfile.mkdtemp(prefix="bench-duel-worker-")
    env = process_env(args, run_id, data_dir)
    if args.image:
        image = args.image
    else:
        from agent_images import build_random_image

        image = build_random_image()
    recreate_database(args, env)
    os.environ.update(env)
    import django

    django.setup()
    rng = random.Random(20261125)
    revisions = seed(args.revisions, image)
    cores = len(os.sched_getaffinity(0))
    print(
        f"{args.duels} timed {MATCHES}-match {GAME} ladder duels per mode (after {args.warmup} untimed), "
        f"{args.revisions} revisions of the random player, one Celery worker x {args.concurrency} "
        f"processes, {cores} cores",
        flush=True,
    )
    rates: dict[str, float] = {}
    try:
        for mode in modes:
            before = load()
            worker = start_worker(env, mode == "warm", f"bench-dw-{run_id}-{mode}")
            try:
                play(revisions, args.warmup, rng, timeout=600)
                engine = engine_pids()

                def sample() -> tuple[float, ...]:
                    return (
                        process_tree_cpu(worker.pid),  # noqa: B023 - called within the iteration
                        sum(process_tree_cpu(p) for p in engine),  # noqa: B023
                        warm_agents_cpu(),
                        postgres_cpu(args.db),
                        machine_busy(),
                    )

                cpu0 = sample()
                seconds, ids = play(revisions, args.duels, rng, timeout=1800)
                cpu1 = sample()
            finally:
                stop_worker(worker)
            per_duel = [(b - a) / args.duels * 1e3 for a, b in zip(cpu0, cpu1, strict=True)]
            problem = check(ids)
            if problem:
                raise SystemExit(f"{mode}: {problem}")
            rates[mode] = args.duels / seconds * 60
            print(
                f"  {mode:4s} (DUEL_SANDBOX_REUSE={'on' if mode == 'warm' else 'off'}): "
                f"{rates[mode]:7.1f} duels/min ({seconds:.1f} s)   "
                f"load average before {before}, after {load()}",
                flush=True,
            )
            agents = f"{per_duel[2]:.0f}" if mode == "warm" else "n/a (containers gone)"
            print(
                f"       CPU ms per duel: worker (referee, Celery, Django) {per_duel[0]:.0f}, "
                f"dockerd + containerd {per_duel[1]:.0f}, warm containers (agents) {agents}, "
                f"PostgreSQL backends {per_duel[3]:.0f}; the whole machine {per_duel[4]:.0f} "
                "(shared: other users' work included)",
                flush=True,
            )
        if {"warm", "cold"} <= set(rates):
            print(f"  warm / cold: {rates['warm'] / rates['cold']:.2f}x")
    finally:
        if not args.keep:
            drop_database(args)
    print(f"duels/min: {rates[modes[0]]:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
