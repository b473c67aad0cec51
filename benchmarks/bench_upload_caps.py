"""What refusing a hostile upload costs: the streaming directory scan
(``agent_uploads.zip_validation.validate_zip``) against ``zipfile.ZipFile`` opening the same archive (what
validation did before), each in a fresh interpreter.

Archives (written byte by byte by ``tests/docker/hostile_zips.py``): a 49 MiB zip with a million directory
entries, the same with an end record hiding the count, and a path 1,500 folders deep. Per archive and way:
CPU seconds, the peak of Python allocations (``tracemalloc``, in a second run), the growth of the resident
set and the bytes read. Prints the load average first: the machine is shared.

    .venv/bin/python benchmarks/bench_upload_caps.py [--skip-zipfile]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "docker"))

from hostile_zips import deep_path_zip, many_entries_zip  # noqa: E402

_PROBE = """
import json, resource, sys, time, tracemalloc, zipfile
from pathlib import Path

def rchar():
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))

way, archive, traced = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "traced"
if way == "scan":
    from agent_uploads.zip_validation import ValidationError, validate_zip
rss0, read0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, rchar()
if traced:
    tracemalloc.start()
cpu0 = time.process_time()
outcome = ""
if way == "scan":
    try:
        validate_zip(archive)
    except ValidationError as exc:
        outcome = str(exc)[:70]
else:
    with zipfile.ZipFile(archive) as zf:
        outcome = f"opened: {len(zf.infolist())} entries"
cpu = time.process_time() - cpu0
peak = tracemalloc.get_traced_memory()[1] if traced else 0
print(json.dumps({"cpu_s": cpu, "peak": peak, "read": rchar() - read0, "outcome": outcome,
                  "rss_growth": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) * 1024}))
"""


def probe(way: str, archive: Path) -> dict:
    """CPU, RSS growth and bytes read from an untraced run; the allocation peak from a traced one
    (``tracemalloc`` slows allocation-heavy code down, so it never times anything)."""

    def run(mode: str) -> dict:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE, way, str(archive), mode],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(proc.stdout.splitlines()[-1])

    timed = run("timed")
    timed["peak"] = run("traced")["peak"]
    return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-zipfile", action="store_true", help="only the streaming scan (zipfile: ~20 s)"
    )
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        archives = {
            "1M entries": many_entries_zip(root / "million.zip"),
            "1M entries, count hidden": many_entries_zip(root / "liar.zip", honest_count=False),
            "1,500 folders deep": deep_path_zip(root / "deep.zip"),
        }
        mib = 1024 * 1024
        print(
            f"{'archive':26} {'way':8} {'CPU s':>8} {'peak MiB':>9} {'RSS+ MiB':>9} {'read MiB':>9}  outcome"
        )
        for label, archive in archives.items():
            for way in ("scan", *(() if args.skip_zipfile else ("zipfile",))):
                r = probe(way, archive)
                print(
                    f"{label:26} {way:8} {r['cpu_s']:8.3f} {r['peak'] / mib:9.2f} "
                    f"{r['rss_growth'] / mib:9.1f} {r['read'] / mib:9.2f}  {r['outcome']}"
                )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
