"""Peak memory and time of the Bradley-Terry tie fit at 1,000 and 10,000 competitors, old tree against new.

The leaderboard's background tie fit (``tournament_manager.tie_fit``) hands pair counts to
``tournament_manager.bradley_terry.fit_pair_counts``. Each case here generates ladder-like pair counts
directly (competitor ``i`` plays its ``--opponents`` nearest neighbours in strength, or with ``--pattern
random`` about as many opponents drawn across the whole board; Poisson games per pair
with ``--results`` in total, decisive results drawn from the true strengths) and fits them in a fresh
subprocess, which reports the fit's tracemalloc peak (numpy and scipy arrays are traced), the process's
peak RSS (``ru_maxrss``, includes the interpreter and libraries) and the fit's wall time.

The baseline is ``tournament_manager/bradley_terry.py`` as of ``--baseline-rev`` (the dense ``n x n``
version), loaded from git into a temporary directory and run the same way, capped by ``--baseline-limit-mb``
of address space so that it fails fast (MemoryError) instead of swapping a shared machine.

    .venv/bin/python benchmarks/bench_tie_fit_memory.py [--competitors 1000 10000] [--results 10000000]
        [--opponents 50] [--bootstrap 100] [--baseline-rev dab7ea5] [--baseline-limit-mb 2000]
        [--pattern ladder|random] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Run in the subprocess (argv: n, results, opponents, bootstrap, limit_mb, pattern); prints one JSON line.
CHILD = r"""
import json, resource, sys, time, tracemalloc
import numpy as np
n, results, opponents, bootstrap, limit_mb = (int(a) for a in sys.argv[1:6])
pattern = sys.argv[6]
if limit_mb > 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
from tournament_manager.bradley_terry import fit_pair_counts

def ladder_pairs(n, results, opponents, seed=0):
    rng = np.random.default_rng(seed)
    true = np.sort(rng.normal(0.0, 1.0, n))
    if pattern == "ladder":
        low = np.repeat(np.arange(n), opponents)
        high = low + np.tile(np.arange(1, opponents + 1), n)
        keep = high < n
        low, high = low[keep], high[keep]
    else:
        a, b = rng.integers(0, n, (2, n * opponents))
        keys = np.unique(np.minimum(a, b)[a != b] * n + np.maximum(a, b)[a != b])
        low, high = keys // n, keys % n
    games = rng.poisson(results / low.size, low.size).astype(np.int64)
    p = 1.0 / (1.0 + np.exp(true[high] - true[low]))
    wins = rng.binomial(games, p)
    table = np.stack([games - wins, np.zeros_like(games), wins], axis=1).astype(np.float64)
    return np.stack([low, high], axis=1), table

pairs, table = ladder_pairs(n, results, opponents)
tracemalloc.start()
start = time.perf_counter()
try:
    bt = fit_pair_counts(n, pairs, table, bootstrap=bootstrap, seed=1)
    half = float(np.mean(bt.upper - bt.lower) / 2)
    outcome = {"method": bt.method, "iterations": bt.iterations, "mean_half_width": half}
except MemoryError:
    outcome = {"method": "MemoryError"}
seconds = time.perf_counter() - start
_, peak = tracemalloc.get_traced_memory()
print(json.dumps({**outcome, "pairs": int(pairs.shape[0]), "seconds": seconds, "traced_peak_mb": peak / 2**20,
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(
    tree: Path, n: int, results: int, opponents: int, bootstrap: int, limit_mb: int, pattern: str
) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    args = [
        sys.executable,
        "-c",
        CHILD,
        str(n),
        str(results),
        str(opponents),
        str(bootstrap),
        str(limit_mb),
        pattern,
    ]
    proc = subprocess.run(args, env=env, cwd=tree, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"method": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def baseline_tree(rev: str, into: Path) -> Path:
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:tournament_manager/bradley_terry.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    package = into / "tournament_manager"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "bradley_terry.py").write_text(source)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--competitors", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--results", type=int, default=10_000_000)
    ap.add_argument("--opponents", type=int, default=50, help="nearest neighbours each competitor plays")
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument(
        "--pattern",
        choices=["ladder", "random"],
        default="ladder",
        help="neighbours, or as many random pairs",
    )
    ap.add_argument("--baseline-rev", default="dab7ea5", help="git revision of the dense bradley_terry.py")
    ap.add_argument("--baseline-limit-mb", type=int, default=2000, help="address-space cap of the baseline")
    ap.add_argument("--skip-baseline", action="store_true")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        trees = [("new", ROOT)]
        if not args.skip_baseline:
            trees.insert(0, (f"old {args.baseline_rev}", baseline_tree(args.baseline_rev, Path(tmp))))
        for n in args.competitors:
            for name, tree in trees:
                limit = args.baseline_limit_mb if tree != ROOT else 0
                row = run(tree, n, args.results, args.opponents, args.bootstrap, limit, args.pattern)
                print(f"n={n:>6} {name:<12} {json.dumps(row)}", flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
