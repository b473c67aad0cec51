"""Hostile archives are refused early, in bounded memory, as the uploader's error (no Docker needed).

Each refusal runs in a fresh interpreter that reports what validating cost it: the peak of Python
allocations (``tracemalloc``), the growth of its resident set (``ru_maxrss``) and the bytes it read
(``rchar`` of ``/proc/self/io``; reading 48 MiB of directory is what used to take seconds).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hostile_zips import deep_path_zip, many_entries_zip

from agent_uploads.zip_validation import ValidationError, ZipLimits, validate_zip
from builder import build_submission

REPO = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
PLAYER_SOURCE = b"class Player:\n    pass\n"

_PROBE = textwrap.dedent(
    """
    import json, resource, sys, tracemalloc
    from pathlib import Path
    from builder import build_submission

    def rchar():
        with open("/proc/self/io") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    read_before = rchar()
    tracemalloc.start()
    result = build_submission(Path(sys.argv[1]), backend="local", work_dir=Path(sys.argv[2]))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(json.dumps({
        "ok": result.ok,
        "error_kind": result.error_kind,
        "error": result.error,
        "peak": peak,
        "rss_growth": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) * 1024,
        "read": rchar() - read_before,
    }))
    """
)


def _probe(archive: Path, work: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, str(archive), str(work)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def million_entries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    archive = many_entries_zip(tmp_path_factory.mktemp("hostile") / "million.zip")
    assert 45 * MIB < archive.stat().st_size < 50 * MIB  # under the upload cap: only the contents are wrong
    return archive


def _assert_cheap_user_error(outcome: dict, message: str) -> None:
    assert outcome["ok"] is False
    assert outcome["error_kind"] == "INVALID_SUBMISSION"  # the uploader's fault: never retried
    assert outcome["error"].startswith(message), outcome["error"]
    assert "\n" not in outcome["error"] and len(outcome["error"]) < 300
    assert outcome["peak"] < 8 * MIB, outcome
    assert outcome["rss_growth"] < 64 * MIB, outcome
    assert outcome["read"] < 2 * MIB, outcome


def test_a_million_entries_are_refused_from_the_end_record(million_entries: Path, tmp_path: Path) -> None:
    outcome = _probe(million_entries, tmp_path)
    _assert_cheap_user_error(outcome, "the zip has 1000000 entries; the limit is 2000 files and folders")


def test_an_end_record_hiding_a_million_entries_is_refused_by_the_directory_size(tmp_path: Path) -> None:
    archive = many_entries_zip(tmp_path / "liar.zip", honest_count=False)
    outcome = _probe(archive, tmp_path / "work")
    _assert_cheap_user_error(outcome, "the zip's directory is 48.6 MiB; the limit is 8.0 MiB")


def test_a_directory_that_outgrows_its_declared_count_is_stopped_while_streaming(tmp_path: Path) -> None:
    archive = many_entries_zip(tmp_path / "liar.zip", entries=50_000, honest_count=False)
    with pytest.raises(ValidationError, match="the zip has more than 2000 entries"):
        validate_zip(archive, ZipLimits(max_directory_bytes=100 * MIB))


def test_a_path_1500_folders_deep_is_the_uploaders_error(tmp_path: Path) -> None:
    outcome = _probe(deep_path_zip(tmp_path / "deep.zip"), tmp_path / "work")
    _assert_cheap_user_error(outcome, "the file name 'd/d/d/")
    assert "is 1501 folders deep; the limit is 32" in outcome["error"]
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())


def test_a_long_path_is_refused(tmp_path: Path) -> None:
    archive = deep_path_zip(tmp_path / "long.zip", depth=1)
    with pytest.raises(ValidationError, match=r"is 10 bytes long; the limit is 9"):
        validate_zip(archive, ZipLimits(max_path_bytes=9))


def test_an_extreme_compression_ratio_is_refused_before_decompressing(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "ratio.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("player.py", b"class Player: ...\n")
        zf.writestr("zeros.bin", bytes(4 * MIB))  # deflates about 1000 to 1
    with pytest.raises(ValidationError, match=r"'zeros\.bin' compresses more than 200 to 1"):
        validate_zip(archive)
    # The same bytes in a file under the floor, or with the cap lifted, are fine.
    assert validate_zip(archive, ZipLimits(max_compression_ratio=10_000)).total_bytes > 4 * MIB


def test_a_normal_agent_still_builds(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "ok.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bot/player.py", b"class Player: ...\n")
        zf.writestr("bot/lib/a/b/c/util.py", b"X = 1\n")
    result = build_submission(archive, backend="local", work_dir=tmp_path / "work")
    assert result.ok, result.error
    assert (Path(result.agent_ref) / "lib" / "a" / "b" / "c" / "util.py").read_text() == "X = 1\n"


def test_corrupt_or_odd_archives_are_the_uploaders_error_never_ours(tmp_path: Path) -> None:
    """Each used to escape as an exception (zlib.error, NotImplementedError, IndexError): an infrastructure
    error the build job retried, or a server error on the upload page."""
    import zipfile

    from hostile_zips import stored_zip

    corrupt = tmp_path / "corrupt.zip"
    with zipfile.ZipFile(corrupt, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("player.py", PLAYER_SOURCE)
        zf.writestr("data.txt", b"0123456789abcdef" * 500)
    with zipfile.ZipFile(corrupt) as zf:
        member = zf.getinfo("data.txt")
    data = bytearray(corrupt.read_bytes())
    start = member.header_offset + 30 + len("data.txt")
    data[start : start + 8] = b"\xff" * 8  # an invalid deflate block
    corrupt.write_bytes(bytes(data))
    cases = {
        corrupt: "'data.txt' cannot be decompressed",
        stored_zip(tmp_path / "future.zip", [(b"player.py", PLAYER_SOURCE)], version_needed=255): (
            "the upload is not a valid zip archive (zip file version 25.5)"
        ),
        stored_zip(tmp_path / "nameless.zip", [(b"player.py", PLAYER_SOURCE), (b"", b"x")]): (
            "the zip holds an entry without a name"
        ),
    }
    for archive, message in cases.items():
        result = build_submission(archive, backend="local", work_dir=tmp_path / "work")
        assert result.error_kind == "INVALID_SUBMISSION", (archive.name, result)
        assert result.error.startswith(message), (archive.name, result.error)
