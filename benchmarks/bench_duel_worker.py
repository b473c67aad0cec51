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

CPU per timed duel: the worker's process tree; dockerd and containerd; the sandbox containers the worker's
processes created (:class:`SandboxCpu`: read from their cgroups through the window, so containers removed
before it ends count too); the PostgreSQL server's backends connected to ``--db`` (processes of the
server, never a client whose command line names the database). Every process runs with
``DATABASE_CONN_MAX_AGE`` as ``example.env`` ships it.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
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


def shipped_setting(name: str, default: str) -> str:
    """Setting ``name`` as ``example.env`` ships it: the configuration operators run."""
    for line in (REPO / "example.env").read_text().splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1].strip()
    return default


def process_env(args: argparse.Namespace, run_id: str, data_dir: str) -> dict[str, str]:
    """What the bench and its worker read their settings from (``DATABASE_CONN_MAX_AGE`` as
    ``example.env`` ships it, whether or not a ``.env`` exists)."""
    return {
        "DJANGO_SETTINGS_MODULE": "core.settings",
        "DATABASE_URL": f"{args.pg}/{args.db}",
        "DATABASE_CONN_MAX_AGE": shipped_setting("DATABASE_CONN_MAX_AGE", "0"),
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
            content_hash=f"{i:064x}",  # each its own code: matchmaking never pairs twins
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
    from run_duel.sandbox.orphans import reap_orphans

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
    """CPU seconds of ``root`` and every live descendant, each with the children it already reaped (a
    descendant that ends moves into its parent's count, so the sum never drops)."""
    return sum(process_cpu(pid) for pid in tree_pids(root))


def process_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and the children it reaped (0 once it is gone)."""
    try:
        fields = _stat(pid)
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


def engine_pids() -> list[int]:
    """dockerd and containerd (shared with everything else using the engine on this machine). Counted
    without their live descendants, which hold the containers' processes (counted from the containers'
    cgroups) and end with them; the per-container shims are not counted."""
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


#: Where the engine's containers' cgroups are: (folder of one per container id, CPU file, its unit in s).
CGROUPS = (
    ("/sys/fs/cgroup/cpuacct/docker", "cpuacct.usage", 1e-9),  # cgroup v1, cgroupfs driver
    ("/sys/fs/cgroup/system.slice", "cpu.stat", 1e-6),  # cgroup v2, systemd driver (docker-<id>.scope)
)


class SandboxCpu:
    """CPU seconds of the sandbox containers (agents, warm factories) that the worker's processes create,
    over a window, including containers removed before it ends: a thread reads their cgroups every
    ``period`` seconds and keeps each container's last reading. Counted from a container's reading at
    :meth:`start` (0 for one created later) to its last reading; what a container spends in its last
    ``period`` before removal is missed. The owner is the ``rl-arena.owner-pid`` label (one inspect per
    new container)."""

    def __init__(self, worker_pid: int, period: float = 0.2) -> None:
        self.worker_pid, self.period = worker_pid, period
        self.owner: dict[str, bool] = {}  # container id -> created by the worker
        self.base: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _usage(container_id: str) -> float | None:
        for folder, name, unit in CGROUPS:
            scope = "" if name == "cpuacct.usage" else "docker-"
            suffix = "" if name == "cpuacct.usage" else ".scope"
            try:
                with open(f"{folder}/{scope}{container_id}{suffix}/{name}") as handle:
                    text = handle.read()
            except OSError:
                continue
            if name == "cpu.stat":
                text = next(line.split()[1] for line in text.splitlines() if line.startswith("usage_usec"))
            return int(text) * unit
        return None

    @staticmethod
    def _ids() -> list[str]:
        found: list[str] = []
        for folder, name, _ in CGROUPS:
            try:
                entries = os.listdir(folder)
            except OSError:
                continue
            if name == "cpuacct.usage":
                found += [e for e in entries if len(e) == 64]
            else:
                found += [e[7:-6] for e in entries if e.startswith("docker-") and e.endswith(".scope")]
        return found

    def _ours(self, container_id: str, pids: set[int]) -> bool:
        if container_id not in self.owner:
            from run_duel.sandbox.docker_client import get_client

            try:
                labels = get_client().api.inspect_container(container_id)["Config"]["Labels"] or {}
                self.owner[container_id] = int(labels.get("rl-arena.owner-pid", -1)) in pids
            except Exception:  # gone already, or not ours to read
                self.owner[container_id] = False
        return self.owner[container_id]

    def poll(self, baseline: bool = False) -> None:
        pids = tree_pids(self.worker_pid)
        for container_id in self._ids():
            if not self._ours(container_id, pids):
                continue
            usage = self._usage(container_id)
            if usage is None:
                continue
            if container_id not in self.base:
                self.base[container_id] = usage if baseline else 0.0
            self.last[container_id] = usage

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            self.poll()

    def start(self) -> None:
        self.poll(baseline=True)
        self._thread.start()

    def stop(self) -> float:
        """Stop reading; the CPU seconds of the window."""
        self._stop.set()
        self._thread.join()
        self.poll()
        return sum(self.last[c] - self.base[c] for c in self.last)


def tree_pids(root: int) -> set[int]:
    """``root`` and its live descendants."""
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
    return tree


def postgres_cpu(database: str) -> float:
    """CPU seconds of the PostgreSQL server's backends connected to ``database`` (live ones): processes
    named ``postgres`` whose title names the database, never a client whose command line holds its name
    (the bench, its Celery worker)."""
    total = 0.0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/comm") as handle:
                    if handle.read().strip() != "postgres":
                        continue
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    title = handle.read().replace(b"\0", b" ").split()
                # "postgres: [<cluster>:] <user> <database> <host> <state>"
                if title[:1] != [b"postgres:"] or database.encode() not in title[1:4]:
                    continue
                total += sum(int(x) for x in _stat(int(name))[11:13]) / os.sysconf("SC_CLK_TCK")
            except (OSError, ValueError, IndexError):
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
                        sum(process_cpu(p) for p in engine),  # noqa: B023
                        postgres_cpu(args.db),
                        machine_busy(),
                    )

                sandboxes = SandboxCpu(worker.pid)
                sandboxes.start()
                cpu0 = sample()
                seconds, ids = play(revisions, args.duels, rng, timeout=1800)
                cpu1 = sample()
                agents_cpu = sandboxes.stop()
            finally:
                stop_worker(worker)
            worker_cpu, engine_cpu, postgres, machine = [
                (b - a) / args.duels * 1e3 for a, b in zip(cpu0, cpu1, strict=True)
            ]
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
            print(
                f"       CPU ms per duel: worker (referee, Celery, Django) {worker_cpu:.0f}, "
                f"dockerd + containerd {engine_cpu:.0f}, the worker's sandbox containers (agents, "
                f"factories) {agents_cpu / args.duels * 1e3:.0f}, PostgreSQL backends {postgres:.0f}; "
                f"the whole machine {machine:.0f} (shared: other users' work included)",
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
