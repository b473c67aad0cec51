"""A referee's move against its floor: the two goals of issue 29 item 2, printed as ratios from one run.

    .venv/bin/python benchmarks/bench_referee_move.py [--matches 100] [--repeat 5] [--moves 2000]
                                                      [--no-docker] [--repo PATH]

1. **In-process referee vs the direct loop.** The same ``--matches``-match Connect Four duel, random vs
   random, played (a) by a direct loop: the game's rules and the two Players called in this thread, each
   Player given the arrays the harness would build (``numpy.asarray`` of the observation's lists and of
   the legal actions), no protocol; (b) by ``play_duel`` with the in-process sandbox (``pin_cpus=False``,
   as the loop is not pinned either): the referee and the harness in this process, every message
   encoded and decoded. Compared: the direct loop's time against the duel's ``phases_s.play`` (the
   matches, not loading the two players, which the direct loop does before its clock starts). The
   in-process sandbox is direct calls since issue 29 (the harness's message handler is called on the
   referee's bytes); ``threaded`` (the harness in a thread over a socketpair) is printed for reference
   when the tree has it.
2. **A move in a warm Docker duel vs the bare round trip.** (a) the duel as a worker with warm containers
   plays it (``DockerSandbox`` with reuse, the seats' containers already warm, CPU pinning on): its
   ``phases_s.play`` divided by its moves (match ends included in the cost); (b) the bare transport: a
   fresh agent process of the same warm container (the same harness, socket and random Player), pinned
   with this thread to one core as a duel is, asked the same Connect Four ``step`` message ``--moves``
   times with ``Channel.send`` + ``Channel.recv`` back to back (no rules, no freezing, no referee): their
   total time divided by ``--moves``, the same statistic as the duel's (a sum over every move, so both
   pay for whatever else the machine runs; the median of single round trips is printed too, with the
   duel's own send->reply median).

Runs alternate (direct, in-process; round trips, warm duel) ``--repeat`` times; medians; the load average
is printed before and after. Each ratio is printed twice: on wall time (what the goals name; on a loaded
machine both sides pay for every other process that takes their core) and on CPU time, which the load
hardly moves: this thread's CPU (``time.thread_time``) plus, in Docker, the CPU of the agents' containers
(their cgroups), over the duel's matches after the first (marked by ``on_match``: no start-up, no
closing) against the direct loop's or the bare round trips' own.

``--repo`` runs the code of another checkout (e.g. a worktree of an older
commit) with this script, for before/after comparisons in one sitting; its Docker image is built from
that checkout's harness.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--moves", type=int, default=2000, help="round trips per bare measurement")
    parser.add_argument("--no-docker", action="store_true", help="the in-process goal only")
    parser.add_argument("--repo", default=str(HERE.parent), help="the checkout whose code runs")
    return parser.parse_args()


ARGS = _args() if __name__ == "__main__" else None
REPO = Path(ARGS.repo).resolve() if ARGS is not None else HERE.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from environments import get_game, get_info  # noqa: E402
from run_duel.referee import play_duel  # noqa: E402
from run_duel.sandbox.base import LaunchSpec, Limits  # noqa: E402
from run_duel.sandbox.inprocess import InProcessSandbox  # noqa: E402

GAME = "connect-four"
RANDOM = REPO / "example_players" / "random"
INFO = get_info(GAME)
#: The game's CPU and memory limits; generous deadlines (a shared machine must not stop the bench).
LIMITS = Limits(cpus=INFO.cpu_limit, memory_mb=INFO.memory_limit_mb, move_timeout=5.0, init_timeout=30.0)
STEP = {"type": "step", "state": [[0] * 7 for _ in range(6)], "valid_actions": list(range(7)), "reward": 0.0}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def random_player() -> object:
    spec = importlib.util.spec_from_file_location("bench_random_player", RANDOM / "player.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Player(False)


def direct_loop(matches: int) -> tuple[float, int]:
    """The duel without a referee: rules and Players called directly. Seconds and moves."""
    game = get_game(GAME)
    players = (random_player(), random_player())
    asarray, int64 = np.asarray, np.int64
    moves = 0
    t0 = time.perf_counter()
    for index in range(matches):
        seats = (players[index % 2], players[1 - index % 2])
        started = [False, False]
        state = game.initial_state()
        while not game.is_over(state):
            seat = game.to_move(state)
            obs = asarray(game.observation(state, seat).tolist())
            legal = asarray(game.legal_actions(state), dtype=int64)
            if started[seat]:
                action = seats[seat].step(obs, legal, 0.0)
            else:
                started[seat] = True
                action = seats[seat].start(obs, legal)
            state = game.apply(state, int(action))
            moves += 1
        rewards = game.rewards(state)
        for seat in (0, 1):
            seats[seat].end(asarray(game.observation(state, seat).tolist()), rewards[seat])
    return time.perf_counter() - t0, moves


def checked(duel: dict) -> dict:
    bad = duel["player_1_errors"] + duel["player_2_errors"] + duel["other_errors"]
    if bad:
        raise RuntimeError(
            f"the duel had errors: {[m['error_msg'] for m in duel['matches'] if m['error_kind']][:1]}"
        )
    return duel


def moves_of(duel: dict) -> int:
    return sum(m["num_moves"] for m in duel["matches"])


class CpuMarks:
    """CPU seconds at the end of the duel's first match and of its last (``on_match``): the matches in
    between, without start-up or closing. ``extra`` adds a counter (the agents' containers)."""

    def __init__(self, matches: int, extra=None) -> None:
        self.last = matches - 1
        self.extra = extra
        self.marks: list[float] = []
        self.moves = 0

    def __call__(self, index: int, match: dict) -> None:
        if index == 0 or index == self.last:
            self.marks.append(time.thread_time() + (self.extra() if self.extra is not None else 0.0))
        elif index < self.last:
            self.moves += match["num_moves"]
        if index == self.last:
            self.moves += match["num_moves"]

    def per_move_us(self) -> float:
        return (self.marks[1] - self.marks[0]) / self.moves * 1e6


def inprocess_play(matches: int, **options: bool) -> tuple[float, int, float]:
    """``phases_s.play`` of the in-process duel, its moves, and the CPU µs per move of its matches after
    the first."""
    spec = LaunchSpec(str(RANDOM))
    marks = CpuMarks(matches)
    duel = checked(
        play_duel(
            GAME,
            InProcessSandbox(**options),
            spec,
            spec,
            matches=matches,
            limits=LIMITS,
            pin_cpus=False,
            on_match=marks,
        )
    )
    return duel["phases_s"]["play"], moves_of(duel), marks.per_move_us()


def threaded_available() -> bool:
    try:
        InProcessSandbox(threaded=True)  # type: ignore[call-arg]
    except TypeError:
        return False
    return True


def goal_inprocess(matches: int, repeat: int) -> tuple[float, float]:
    threaded = threaded_available()
    direct_us: list[float] = []
    referee_us: list[float] = []
    threaded_us: list[float] = []
    direct_cpu: list[float] = []
    referee_cpu: list[float] = []
    for _ in range(repeat):
        cpu = time.thread_time()
        seconds, moves = direct_loop(matches)
        direct_cpu.append((time.thread_time() - cpu) / moves * 1e6)
        direct_us.append(seconds / moves * 1e6)
        seconds, moves, cpu_us = inprocess_play(matches)
        referee_us.append(seconds / moves * 1e6)
        referee_cpu.append(cpu_us)
        if threaded:
            seconds, moves, _ = inprocess_play(matches, threaded=True)
            threaded_us.append(seconds / moves * 1e6)
    direct, referee = statistics.median(direct_us), statistics.median(referee_us)
    runs = ", ".join(f"{d:.1f}/{r:.1f}" for d, r in zip(direct_us, referee_us, strict=True))
    print(f"in-process, {matches}-match {GAME} duel, random vs random, median of {repeat} (µs/move):")
    print(
        f"  wall: direct loop {direct:.1f}; in-process referee (play phase) {referee:.1f}"
        f"  [direct/referee: {runs}]"
    )
    print(
        f"  CPU of this thread: direct loop {statistics.median(direct_cpu):.1f}; in-process referee "
        f"{statistics.median(referee_cpu):.1f} (its matches after the first)"
    )
    if threaded:
        print(
            "  (wall with the harness in a thread over a socketpair instead: "
            f"{statistics.median(threaded_us):.1f})"
        )
    return referee / direct, statistics.median(referee_cpu) / statistics.median(direct_cpu)


def goal_docker(matches: int, repeat: int, moves: int) -> tuple[float, float]:
    sys.path.insert(0, str(HERE))
    from agent_images import build_random_image  # the builder of --repo builds its own harness in

    from run_duel.sandbox.docker import DockerSandbox
    from run_duel.sandbox.docker_process import LIVE
    from run_duel.sandbox.docker_warm import ReusePolicy

    image = build_random_image()
    sandbox = DockerSandbox(reuse=ReusePolicy(enabled=True))
    spec = LaunchSpec(agent=image, labels={"duel": "bench"})
    cpus = frozenset({max(os.sched_getaffinity(0))})

    def bare() -> tuple[float, float, float]:
        proc = sandbox.launch(LaunchSpec(agent=image, limits=LIMITS, labels={"duel": "bench"}))
        saved = os.sched_getaffinity(0)
        try:
            assert proc.channel.recv(30, 65536)["type"] == "ready"
            if not proc.pin_cpus(cpus):
                raise RuntimeError("could not pin the agent")
            os.sched_setaffinity(0, cpus)
            send, recv = proc.channel.send, proc.channel.recv
            send({"type": "start", "state": STEP["state"], "valid_actions": [0]}, 5)
            recv(5, 65536)
            times = []
            perf = time.perf_counter
            for _ in range(200):
                send(STEP, 5)
                recv(5, 65536)
            counter = proc.cpu_usage()
            agent_cpu = counter.seconds() if counter is not None else None
            cpu = time.thread_time()
            t0 = perf()
            for _ in range(moves):
                t = perf()
                send(STEP, 5)
                recv(5, 65536)
                times.append(perf() - t)
            total = perf() - t0
            cpu = time.thread_time() - cpu
            if counter is not None and agent_cpu is not None:
                cpu += (counter.seconds() or 0.0) - agent_cpu
                counter.close()
            send({"type": "close"}, 1)
            proc.channel.wait_closed(1)
            return total / moves * 1e6, statistics.median(times) * 1e6, cpu / moves * 1e6
        finally:
            os.sched_setaffinity(0, saved)
            proc.kill()

    def containers_cpu() -> float:
        """CPU seconds of the running agents' containers (their cgroups), read each time afresh."""
        total = 0.0
        for proc in list(LIVE):
            counter = proc.cpu_usage()
            if counter is not None:
                total += counter.seconds() or 0.0
                counter.close()
        return total

    def duel() -> tuple[float, float, float]:
        marks = CpuMarks(matches, containers_cpu)
        result = checked(play_duel(GAME, sandbox, spec, spec, matches=matches, limits=LIMITS, on_match=marks))
        replies = [t for m in result["matches"] for t in m["move_times"]]
        play = result["phases_s"]["play"] / moves_of(result) * 1e6
        return play, statistics.median(replies) * 1e6, marks.per_move_us()

    bare_us: list[float] = []
    bare_median_us: list[float] = []
    bare_cpu: list[float] = []
    move_us: list[float] = []
    reply_us: list[float] = []
    move_cpu: list[float] = []
    try:
        play_duel(GAME, sandbox, spec, spec, matches=2, limits=LIMITS)  # the seats' containers get warm
        for _ in range(repeat):
            mean, median, cpu = bare()
            bare_us.append(mean)
            bare_median_us.append(median)
            bare_cpu.append(cpu)
            per_move, reply, cpu = duel()
            move_us.append(per_move)
            reply_us.append(reply)
            move_cpu.append(cpu)
    finally:
        sandbox.close()
        sandbox.pool.close()
    floor, move = statistics.median(bare_us), statistics.median(move_us)
    runs = ", ".join(f"{b:.0f}/{m:.0f}" for b, m in zip(bare_us, move_us, strict=True))
    print(f"Docker, warm containers, {matches}-match {GAME} duel, median of {repeat} (µs):")
    print(
        f"  bare round trip (all of {moves} back to back / {moves}) {floor:.1f}; a move in the warm duel "
        f"(play phase / moves) {move:.1f}  [bare/move: {runs}]"
    )
    print(
        f"  (medians of single round trips: bare {statistics.median(bare_median_us):.1f}, the duel's own "
        f"send->reply {statistics.median(reply_us):.1f})"
    )
    cpu_floor, cpu_move = statistics.median(bare_cpu), statistics.median(move_cpu)
    print(
        f"  CPU (this thread + the agents' containers): bare round trip {cpu_floor:.1f}; a move in the warm "
        f"duel {cpu_move:.1f} (its matches after the first)"
    )
    return move / floor, cpu_move / cpu_floor


def main() -> int:
    assert ARGS is not None
    print(f"code: {REPO}")
    print(f"load average before: {load()}", flush=True)
    inprocess = goal_inprocess(ARGS.matches, ARGS.repeat)
    docker = None if ARGS.no_docker else goal_docker(ARGS.matches, ARGS.repeat, ARGS.moves)
    print(f"load average after: {load()}")
    print(
        f"GOAL in-process referee / direct loop: {inprocess[0]:.2f} wall, {inprocess[1]:.2f} CPU"
        " (goal <= 1.5)"
    )
    if docker is not None:
        print(
            f"GOAL warm Docker move / bare round trip: {docker[0]:.2f} wall, {docker[1]:.2f} CPU (goal <= 2)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
