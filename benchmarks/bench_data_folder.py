"""What an agent's persistent data folder costs a duel, in each sandbox.

    .venv/bin/python benchmarks/bench_data_folder.py [--duels 20] [--sandboxes local,docker,warm]
                                                     [--files 50] [--kb 1024]

For each sandbox (``local``: bubblewrap; ``docker``: a fresh container per seat; ``warm``: warm containers,
the shipped configuration) it plays ten-match Tic-tac-toe duels of the random example player against
itself, alternately without a data folder (``Limits.data_mb`` 0: what every duel cost before) and with
one for each seat as the platform ships it (``AGENT_DATA_MB`` 10), filled with ``--files`` files of
``--kb`` KB in all and read back after the duel (both seats save). Printed: the median and minimum
duel time of each, the ratio with/without, and the load average before and after. Nothing in the agents
touches the folder: the difference is the platform's (mounting the tmpfs, filling it, reading it back).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from run_duel.agent_data import DEFAULT_DATA_MB, AgentData, files_of  # noqa: E402
from run_duel.api import LaunchSpec, Limits, play_duel  # noqa: E402

RANDOM = REPO / "example_players" / "random"


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def archive(files: int, kb: int) -> bytes:
    """A tar of ``files`` files of random bytes, ``kb`` KB in all, in two folders."""
    buffer = io.BytesIO()
    size = kb * 1024 // max(files, 1)
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for i in range(files):
            info = tarfile.TarInfo(f"part{i % 2}/file{i}.bin")
            info.size = size
            tar.addfile(info, io.BytesIO(os.urandom(size)))
    return buffer.getvalue()


def make_sandbox(name: str):
    if name == "local":
        from run_duel.sandbox.local import LocalSandbox

        return LocalSandbox(use_bwrap=True), str(RANDOM)
    from builder.cli_images import resolve_docker_agent
    from run_duel.sandbox.docker import DockerSandbox
    from run_duel.sandbox.docker_warm import ReusePolicy

    runtime = tempfile.mkdtemp(prefix="bench-data-")
    sandbox = DockerSandbox(runtime_dir=runtime, reuse=ReusePolicy(enabled=name == "warm", max_duels=10_000))
    return sandbox, resolve_docker_agent(str(RANDOM))


def one_duel(sandbox, agent: str, content: bytes | None) -> float:
    specs = []
    for seat in (1, 2):
        limits = Limits(data_mb=DEFAULT_DATA_MB if content is not None else 0)
        data = AgentData(archive=content) if content is not None else None
        specs.append(LaunchSpec(agent=agent, limits=limits, data=data, labels={"revision": f"bench-{seat}"}))
    expected = files_of(content or b"")
    t0 = time.perf_counter()
    duel = play_duel("tic-tac-toe", sandbox, specs[0], specs[1], matches=10, record_states=False)
    elapsed = time.perf_counter() - t0
    errors = duel["player_1_errors"] + duel["player_2_errors"] + duel["other_errors"]
    if errors:
        raise SystemExit(f"a benchmark duel erred: {duel['error_msg'] or duel['matches'][0]['error_msg']}")
    for spec in specs:
        if spec.data is not None and (spec.data.saved is None or files_of(spec.data.saved) != expected):
            raise SystemExit(f"the folder was not read back whole: {spec.data.problem}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duels", type=int, default=20, help="duels of each kind per sandbox")
    parser.add_argument("--sandboxes", default="local,docker,warm")
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--kb", type=int, default=1024)
    args = parser.parse_args()
    content = archive(args.files, args.kb)
    print(f"data folder: {args.files} files, {args.kb} KB ({len(content)} B of tar); {load()}", flush=True)
    for name in args.sandboxes.split(","):
        sandbox, agent = make_sandbox(name)
        try:
            one_duel(sandbox, agent, None)  # warm-up: images, warm containers, page cache
            one_duel(sandbox, agent, content)
            times: dict[str, list[float]] = {"without": [], "with": []}
            for i in range(args.duels * 2):
                kind = "without" if i % 2 == 0 else "with"
                times[kind].append(one_duel(sandbox, agent, content if kind == "with" else None))
        finally:
            sandbox.close()
            pool = getattr(sandbox, "pool", None)
            if pool is not None:
                pool.close()
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        low = {k: min(v) * 1000 for k, v in times.items()}
        print(
            f"{name:7s} without folder: median {med['without']:7.1f} ms (min {low['without']:6.1f})"
            f" | with: median {med['with']:7.1f} ms (min {low['with']:6.1f})"
            f" | ratio {med['with'] / med['without']:.2f} | {med['with'] - med['without']:+.1f} ms"
            f" | {load()}",
            flush=True,
        )


if __name__ == "__main__":
    main()
