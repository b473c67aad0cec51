"""The Docker sandbox's duel cost model, measured: worker-seconds = fixed (start and stop) + per match.

    .venv/bin/python benchmarks/duel_cost.py [--duels 6] [--out benchmarks/fixtures/duel_cost.json]

Plays Connect Four duels of 2 and of 20 matches, random vs random (the agents think for microseconds,
so what is timed is the platform), alternately, each exactly as a duel task runs it. **cold**: the
Docker sandbox is created, both containers launched to ``ready``, the real referee plays, both
containers are closed and removed (``DockerSandbox.close`` included). **warm**
(``DUEL_SANDBOX_REUSE=on``): one long-lived sandbox, as a worker process keeps it, whose containers
serve every duel (a fresh agent process per seat and duel). ``per_match_s`` is the slope between the medians
of the two lengths and ``fixed_s`` the intercept. The worker's database work per duel (claim, result,
rating: ~22 ms of CPU per result in bench_control_plane) is not included. Writes the JSON that
``bench_rating_quality.py`` reads, with the load average and time of the measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
OUT = REPO / "benchmarks" / "fixtures" / "duel_cost.json"
SHORT, LONG = 2, 20


def timed_duel(image: str, matches: int, warm: object | None) -> float:
    """Wall seconds of one Docker duel: sandbox creation to removal (cold), or in the worker's long-lived
    warm sandbox ``warm`` (the containers stay between duels, as in a worker process)."""
    from run_duel.api import play_duel
    from run_duel.sandbox.base import LaunchSpec
    from run_duel.sandbox.docker import DockerSandbox

    t0 = time.perf_counter()
    sandbox = warm or DockerSandbox()
    try:
        spec = LaunchSpec(agent=image, labels={"duel": "bench-cost"})
        duel = play_duel("connect-four", sandbox, spec, spec, matches=matches)
    finally:
        if warm is None:
            sandbox.close()
    elapsed = time.perf_counter() - t0
    if duel["player_1_errors"] + duel["player_2_errors"] + duel["other_errors"]:
        raise RuntimeError(f"the duel had errors: {duel['matches'][0]['error_msg']}")
    return elapsed


def main() -> None:
    """Measure and write the cost model."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duels", type=int, default=6, help="duels of each length")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO / "benchmarks"))
    from agent_images import build_random_image

    from run_duel.sandbox.docker import DockerSandbox
    from run_duel.sandbox.docker_warm import ReusePolicy

    image = build_random_image()
    load = os.getloadavg()
    data: dict = {}
    for mode in ("cold", "warm"):
        warm = DockerSandbox(reuse=ReusePolicy(enabled=True)) if mode == "warm" else None
        try:
            timed_duel(image, SHORT, warm)  # warm-up: caches (and, warm, the containers) in
            times: dict[int, list[float]] = {SHORT: [], LONG: []}
            for _ in range(args.duels):
                for k in (SHORT, LONG):
                    times[k].append(timed_duel(image, k, warm))
        finally:
            if warm is not None:
                warm.close()
        short, long = statistics.median(times[SHORT]), statistics.median(times[LONG])
        per_match = max(0.0, (long - short) / (LONG - SHORT))
        data[mode] = {
            "fixed_s": round(short - SHORT * per_match, 4),
            "per_match_s": round(per_match, 5),
            "median_s": {str(SHORT): round(short, 4), str(LONG): round(long, 4)},
        }
    data |= {
        "duels_per_length": args.duels,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average_before": [round(x, 2) for x in load],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "how": "benchmarks/duel_cost.py: Connect Four, random vs random, Docker sandbox, creation to removal",
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
