"""Instructions per move of the in-process referee and of the direct loop, counted by callgrind (valgrind):
a figure the machine's load does not move, for before/after comparisons on a busy host.

    .venv/bin/python benchmarks/bench_referee_instructions.py [--repo PATH] [--short 10] [--long 60]

The two duels of ``bench_referee_move.py``'s first goal (a Connect Four duel, random vs random: the
referee with the in-process sandbox, and the direct loop of the same rules and Players), made
deterministic (both random Players seeded alike, ``PYTHONHASHSEED=0``, one BLAS thread), each run under
``valgrind --tool=callgrind`` twice, ``--short`` and ``--long`` matches, the process ending right after
the duel (no interpreter shutdown): the difference of the two runs' instruction counts divided by the
difference of their moves is a move's instructions, start-up and loading left out. Prints both and their
ratio (the goal's ratio is on time: instructions say where the work is, not the cost of cache misses).
``--repo`` runs another checkout's code (e.g. a worktree of an older commit). Takes about a minute.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def play(repo: str, mode: str, matches: int) -> None:
    """In the process callgrind watches: play and print the moves, then end at once."""
    sys.path.insert(0, repo)
    os.urandom = lambda n: bytes(range(n))  # the random Players alike
    from run_duel.sandbox.base import LaunchSpec, Limits

    if mode == "referee":
        from run_duel.referee import play_duel
        from run_duel.sandbox.inprocess import InProcessSandbox

        spec = LaunchSpec(str(Path(repo) / "example_players" / "random"))
        limits = Limits(cpus=1, memory_mb=512, move_timeout=5.0, init_timeout=30.0)
        duel = play_duel(
            "connect-four", InProcessSandbox(), spec, spec, matches=matches, limits=limits, pin_cpus=False
        )
        if duel["player_1_errors"] + duel["player_2_errors"] + duel["other_errors"]:
            raise RuntimeError("the duel had errors")
        moves = sum(m["num_moves"] for m in duel["matches"])
    else:
        sys.argv = [sys.argv[0]]
        sys.path.insert(0, str(Path(repo) / "benchmarks"))  # its loop on that checkout's rules
        from bench_referee_move import direct_loop

        moves = direct_loop(matches)[1]
    print(f"moves {moves}", flush=True)
    os._exit(0)


def count(repo: str, mode: str, matches: int, folder: str) -> tuple[int, int]:
    """(instructions, moves) of one run under callgrind."""
    out = os.path.join(folder, f"{mode}.{matches}.out")
    env = {**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    run = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__, "--play",
         mode, "--repo", repo, "--short", str(matches)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    moves = int(re.findall(r"^moves (\d+)$", run.stdout, re.M)[-1])
    totals = re.findall(r"^(?:summary|totals): (\d+)", Path(out).read_text(errors="replace"), re.M)
    return int(totals[0]), moves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", default=str(HERE.parent), help="the checkout whose code runs")
    parser.add_argument("--short", type=int, default=10)
    parser.add_argument("--long", type=int, default=60)
    parser.add_argument("--play", choices=("referee", "direct"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    repo = str(Path(args.repo).resolve())
    if args.play:
        play(repo, args.play, args.short)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed")
        return 1
    per_move = {}
    with tempfile.TemporaryDirectory() as folder:
        for mode in ("direct", "referee"):
            (short_ir, short_moves), (long_ir, long_moves) = (
                count(repo, mode, n, folder) for n in (args.short, args.long)
            )
            per_move[mode] = (long_ir - short_ir) / (long_moves - short_moves)
            print(f"{mode}: {per_move[mode]:,.0f} instructions per move ({long_moves - short_moves} moves)")
    print(f"code: {repo}")
    print(f"in-process referee / direct loop, instructions: {per_move['referee'] / per_move['direct']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
