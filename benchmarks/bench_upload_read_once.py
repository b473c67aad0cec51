"""What reading an upload's archive costs on its way in, before and after it was read once.

Before (the sequence of calls an upload used to make): the form streamed the zip's directory
(``check_directory``), the syntax check opened it (``python_check.first_syntax_error``), the action
validated the stored copy (``validate_zip``: the directory again, another open, every file inflated) and
the page opened it once more for the language. After: ``agent_uploads.upload.read_upload`` (one scan, one
open, every file inflated once, the sources kept) and ``python_check.first_error_in`` on what it kept.
Copying and storing the bytes are the same in both and left out. Per archive: CPU seconds (median of
``--runs``), bytes read from the file (``/proc/self/io`` rchar), zip opens. Prints the load average first:
the machine is shared.

    .venv/bin/python benchmarks/bench_upload_read_once.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from agent_uploads import python_check  # noqa: E402
from agent_uploads.languages import detect_language  # noqa: E402
from agent_uploads.upload import read_upload  # noqa: E402
from agent_uploads.zip_validation import check_directory, validate_zip  # noqa: E402

PLAYER = (REPO / "example_players" / "random" / "player.py").read_bytes()


def _rchar() -> int:
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


def archives(folder: Path) -> dict[str, Path]:
    """A small agent, one with 30 MiB of weights, one with 1,500 small files."""
    made = {}
    specs = {
        "player.py only": {"player.py": PLAYER},
        "player.py + 30 MiB weights": {"player.py": PLAYER, "weights.bin": os.urandom(30 << 20)},
        "1,500 files of 2 KiB": {"player.py": PLAYER} | {f"data/f{i}.txt": b"x" * 2048 for i in range(1500)},
    }
    for name, files in specs.items():
        path = folder / f"{len(made)}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for member, data in files.items():
                zf.writestr(member, data)
        made[name] = path
    return made


def before(path: Path) -> None:
    with open(path, "rb") as upload:
        check_directory(upload)
        python_check.first_syntax_error(upload)
        validate_zip(path)
        with zipfile.ZipFile(upload) as zf:
            detect_language(zf.namelist())
        upload.seek(0)


def after(path: Path) -> None:
    with open(path, "rb") as upload:
        python_check.first_error_in(read_upload(upload))


def measure(way, path: Path, runs: int) -> tuple[float, int, int]:
    opens = 0
    real_init = zipfile.ZipFile.__init__

    def counting(self, file, mode="r", *args, **kwargs):
        nonlocal opens
        opens += mode == "r"
        real_init(self, file, mode, *args, **kwargs)

    cpu = []
    for _ in range(runs):
        read0 = _rchar()
        opens = 0
        zipfile.ZipFile.__init__ = counting
        try:
            started = time.process_time()
            way(path)
            cpu.append(time.process_time() - started)
        finally:
            zipfile.ZipFile.__init__ = real_init
        read = _rchar() - read0
    return statistics.median(cpu), read, opens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in archives(Path(tmp)).items():
            size = path.stat().st_size
            for label, way in (("before", before), ("after", after)):
                cpu, read, opens = measure(way, path, args.runs)
                print(
                    f"{name:28} ({size / (1 << 20):5.1f} MiB) {label:6}: {cpu:6.3f} s CPU, "
                    f"{read / (1 << 20):6.2f} MiB read, {opens} zip opens"
                )


if __name__ == "__main__":
    main()
