"""What freezing the waiting agent costs per move, and whether it makes the move limit fair.

    .venv/bin/python benchmarks/bench_freeze.py [--moves 2000] [--property 0] [--sandboxes local,docker]

Cost: for each sandbox, one seat running the random example player answers ``--moves`` Connect Four
``step`` messages through ``run_duel.seat.Seat`` (the driver every duel uses), alternately in batches of
100 with freezing on (thaw, send, reply, freeze: what a move does) and off (``freeze`` a no-op), both ends
pinned to one core as a duel runs. Printed: the median round trip of each, their difference (what
freezing adds per move; goal <= 50 µs), and the median of the two cgroup writes alone (``thaw`` +
``freeze`` of an idle agent).

Property (``--property N``, Docker only): N tic-tac-toe matches of ``tests/run_duel/agents/busy_60`` (60 %
of the 1 s move limit in CPU seconds per move) against ``tests/run_duel/agents/spinner`` (detached
spinning processes), pinned and unpinned, and the same against the random player (the baseline: what the
machine's own load does), with freezing on; then once with freezing off against the spinner. Printed: the
busy agent's timeouts in each. The load average is printed before and after every part: on a loaded
machine the baseline times out too, and only the comparison with it means anything; ``--nice -20`` (root)
runs the referee and every agent it launches at that niceness, so that the machine's other load takes
little from the duel and what remains is what the opponent takes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from run_duel.cpu_slots import claim_cpu_slot  # noqa: E402
from run_duel.referee import play_duel  # noqa: E402
from run_duel.sandbox.base import AgentProcess, LaunchSpec, Limits  # noqa: E402
from run_duel.seat import Seat  # noqa: E402

RANDOM = REPO / "example_players" / "random"
AGENTS = REPO / "tests" / "run_duel" / "agents"
BOARD = [[0] * 7 for _ in range(6)]
LIMITS = Limits(move_timeout=5.0, init_timeout=60.0)
BATCH = 100


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def make_sandbox(name: str):
    if name == "docker":
        from run_duel.sandbox.docker import DockerSandbox

        return DockerSandbox()
    from run_duel.sandbox.local import LocalSandbox

    return LocalSandbox()


def agent_ref(sandbox_name: str, folder: Path) -> str:
    if sandbox_name == "docker":
        from builder.cli_images import resolve_docker_agent

        return resolve_docker_agent(str(folder))
    return str(folder)


def cost(sandbox_name: str, moves: int) -> None:
    sandbox = make_sandbox(sandbox_name)
    seat = Seat(0, sandbox, LaunchSpec(agent_ref(sandbox_name, RANDOM), limits=LIMITS))
    slot = claim_cpu_slot()
    try:
        seat.spawn()
        seat.await_ready()
        proc = seat.proc
        assert proc is not None, seat.fatal
        if slot is not None:
            proc.pin_cpus(slot.cpus)
            slot.pin_current_thread()
        if not proc.freeze():
            print(f"{sandbox_name}: this agent cannot be frozen here (no writable freezer cgroup)")
            return
        real_freeze = type(proc).freeze
        on: list[float] = []
        off: list[float] = []
        seat.started = True
        for ply in range(200):  # warm-up
            seat.move(BOARD, list(range(7)), ply)
        for batch in range(2 * (moves // (2 * BATCH))):
            freezing = batch % 2 == 0
            proc.freeze = (lambda: real_freeze(proc)) if freezing else (lambda: False)  # type: ignore[method-assign]
            if not freezing:
                proc.thaw()
            times = on if freezing else off
            for ply in range(BATCH):
                _, elapsed = seat.move(BOARD, list(range(7)), ply)
                times.append(elapsed)
        proc.freeze = lambda: real_freeze(proc)  # type: ignore[method-assign]
        writes = []
        for _ in range(moves):
            t0 = time.perf_counter()
            proc.thaw()
            proc.freeze()
            writes.append(time.perf_counter() - t0)
        on_us, off_us = statistics.median(on) * 1e6, statistics.median(off) * 1e6
        print(
            f"{sandbox_name:7s} round trip median: frozen between moves {on_us:8.1f} µs, never frozen "
            f"{off_us:8.1f} µs, added {on_us - off_us:+7.1f} µs; thaw+freeze writes alone "
            f"{statistics.median(writes) * 1e6:6.1f} µs ({len(on)} + {len(off)} moves, "
            f"{'pinned to ' + str(sorted(slot.cpus)) if slot else 'unpinned'}; {load()})"
        )
    finally:
        seat.discard()
        sandbox.close()
        if slot is not None:
            slot.release()


def agent_pids(proc: AgentProcess) -> list[int]:
    """The processes of an agent (its cgroup's), as this process sees them."""
    cgroup = getattr(proc, "_cgroup", None)
    if cgroup is not None:
        return cgroup.pids()
    freezer = getattr(proc, "_freezer", None)
    if freezer is None:
        return []
    return [int(pid) for pid in (freezer.directory / "cgroup.procs").read_text().split()]


def renice_launches(sandbox, niceness: int) -> None:
    """Give every agent the sandbox launches, and this process, ``niceness`` (set right after launch,
    before player.py is imported: processes the agent forks inherit it)."""
    os.setpriority(os.PRIO_PROCESS, 0, niceness)
    launch = sandbox.launch

    def niced_launch(spec):
        proc = launch(spec)
        for pid in agent_pids(proc):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, pid, niceness)
        return proc

    sandbox.launch = niced_launch


def timeouts(sandbox, busy: str, opponent: str, matches: int, pinned: bool) -> tuple[int, int]:
    """(matches where the busy agent was charged TIMEOUT, matches played)."""
    limits = Limits(move_timeout=1.0, init_timeout=60.0)
    charged = played = 0
    while played < matches:
        n = min(10, matches - played)
        duel = play_duel(
            "tic-tac-toe",
            sandbox,
            LaunchSpec(busy),
            LaunchSpec(opponent),
            matches=n,
            limits=limits,
            pin_cpus=pinned,
        )
        for match in duel["matches"]:
            if match["result"] == "PLAYER_1_ERROR" and match["error_kind"] == "TIMEOUT":
                charged += 1
                print("   ", match["error_msg"].splitlines()[0])
        played += n
    return charged, played


def fairness(matches: int, niceness: int, spinner_only: bool = False) -> None:
    sandbox = make_sandbox("docker")
    if niceness:
        renice_launches(sandbox, niceness)
        print(f"duels at niceness {niceness}: the machine's other load competes little with them")
    busy = agent_ref("docker", AGENTS / "busy_60")
    spinner = agent_ref("docker", AGENTS / "spinner")
    random_ = agent_ref("docker", RANDOM)
    try:
        rows = [
            ("vs spinner, pinned", spinner, True, True),
            ("vs spinner, unpinned", spinner, False, True),
            ("vs random (baseline), pinned", random_, True, True),
            ("vs random (baseline), unpinned", random_, False, True),
            ("vs spinner, pinned, NOT frozen", spinner, True, False),
        ]
        if spinner_only:
            rows = rows[:2]
        for label, opponent, pinned, freezing in rows:
            saved = AgentProcess.freeze
            if not freezing:
                from run_duel.sandbox.docker_process import DockerAgentProcess

                saved = DockerAgentProcess.freeze
                DockerAgentProcess.freeze = lambda self: False  # type: ignore[method-assign]
            before = load()
            try:
                charged, played = timeouts(sandbox, busy, opponent, matches, pinned)
            finally:
                if not freezing:
                    DockerAgentProcess.freeze = saved  # type: ignore[method-assign]
            result = f"{charged:3d} timeouts in {played} matches"
            print(f"busy 60 % {label:34s}: {result} ({before}; after: {load()})")
    finally:
        sandbox.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--moves", type=int, default=2000)
    parser.add_argument("--property", type=int, default=0, metavar="N", help="matches per fairness row")
    parser.add_argument("--sandboxes", default="local,docker")
    parser.add_argument("--spinner-only", action="store_true", help="only the spinner rows, frozen")
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="run the fairness duels (referee and agents) at this niceness, e.g. -20 on a shared machine",
    )
    args = parser.parse_args()
    print(f"bench_freeze: {os.cpu_count()} cores, {load()}")
    for name in filter(None, args.sandboxes.split(",")):
        cost(name.strip(), args.moves)
    if args.property:
        fairness(args.property, args.nice, args.spinner_only)


if __name__ == "__main__":
    main()
