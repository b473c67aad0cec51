"""Submission zip validation and the local build backend (no Docker needed).

Each bad zip is refused with a message its author can act on; good zips (player.py at the top, or inside
one top-level folder) are accepted and normalised.
"""

from __future__ import annotations

import random
import stat
import struct
import zipfile
from pathlib import Path

import pytest

from agent_uploads.zip_validation import ValidationError, ZipLimits, validate_zip
from builder import build_submission

PLAYER = b"class Player:\n    def __init__(self, train_mode=False):\n        pass\n"


def make_zip(path: Path, entries: list[tuple[str | zipfile.ZipInfo, bytes]]) -> Path:
    """Write a zip from (name or ZipInfo, data) pairs, exactly as given (duplicates included)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            with pytest.warns(UserWarning) if _is_duplicate(archive, name) else _nothing():
                archive.writestr(name, data)
    return path


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _is_duplicate(archive: zipfile.ZipFile, name: str | zipfile.ZipInfo) -> bool:
    key = name.filename if isinstance(name, zipfile.ZipInfo) else name
    return key in archive.NameToInfo


def info(name: str, mode: int = 0) -> zipfile.ZipInfo:
    """A ZipInfo with Unix mode bits (file type included)."""
    item = zipfile.ZipInfo(name)
    item.create_system = 3
    item.external_attr = mode << 16
    item.compress_type = zipfile.ZIP_DEFLATED
    return item


def patch_member(
    archive: Path, name: str, *, local_offset: int, central_offset: int, fmt: str, value: int
) -> None:
    """Overwrite one field of ``name``'s local header and central directory record (crafting bad zips)."""
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as zf:
        member = zf.getinfo(name)
        pos = zf.start_dir
    struct.pack_into(fmt, data, member.header_offset + local_offset, value)
    while data[pos : pos + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        if data[pos + 46 : pos + 46 + name_len] == name.encode():
            struct.pack_into(fmt, data, pos + central_offset, value)
        pos += 46 + name_len + extra_len + comment_len
    archive.write_bytes(bytes(data))


BAD_ZIPS = {
    "player.py missing": (
        [("bot.py", PLAYER), ("README.md", b"hi")],
        "player.py is missing: the zip must contain player.py at its top level",
    ),
    "player.py only in a deeper folder": ([("a/b/player.py", PLAYER)], "player.py is missing"),
    "two top-level folders": ([("a/player.py", PLAYER), ("b/player.py", PLAYER)], "player.py is missing"),
    "absolute path": ([("player.py", PLAYER), ("/etc/cron.d/evil", b"x")], "is an absolute path"),
    "parent folder": ([("player.py", PLAYER), ("../evil.py", b"x")], "contains '..'"),
    "parent folder in the middle": ([("player.py", PLAYER), ("lib/../../evil.py", b"x")], "contains '..'"),
    "backslash": ([("player.py", PLAYER), ("..\\evil.py", b"x")], "contains a backslash"),
    "windows drive": ([("player.py", PLAYER), ("C:/evil.py", b"x")], "is an absolute path"),
    "control character": ([("player.py", PLAYER), ("evil\x07.py", b"x")], "contains control characters"),
    "symlink": (
        [("player.py", PLAYER), (info("secrets", stat.S_IFLNK | 0o777), b"/etc/shadow")],
        "is a symbolic link; symbolic links are not allowed",
    ),
    "device file": (
        [("player.py", PLAYER), (info("disk", stat.S_IFBLK | 0o600), b"")],
        "is a special file (device, FIFO or socket)",
    ),
    "fifo": ([("player.py", PLAYER), (info("pipe", stat.S_IFIFO | 0o600), b"")], "is a special file"),
    "duplicate name": ([("player.py", PLAYER), ("player.py", PLAYER)], "contains 'player.py' twice"),
    "file used as a folder": (
        [("player.py", PLAYER), ("lib", b"x"), ("lib/mod.py", b"x")],
        "'lib' is both a file and a folder",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ZIPS))
def test_bad_zip_is_refused_with_a_clear_message(case: str, tmp_path: Path) -> None:
    entries, message = BAD_ZIPS[case]
    archive = make_zip(tmp_path / "upload.zip", entries)
    with pytest.raises(ValidationError, match=_escape(message)):
        validate_zip(archive)


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_an_encrypted_entry_is_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER)])
    patch_member(archive, "player.py", local_offset=6, central_offset=8, fmt="<H", value=0x1)
    with pytest.raises(ValidationError, match=r"'player\.py' is encrypted; upload a zip without a password"):
        validate_zip(archive)


def test_a_file_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "upload.zip"
    path.write_bytes(b"this is not a zip file at all")
    with pytest.raises(ValidationError, match="not a valid zip archive"):
        validate_zip(path)


def test_an_empty_upload_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "upload.zip"
    path.write_bytes(b"")
    with pytest.raises(ValidationError, match="the upload is empty"):
        validate_zip(path)


def test_an_upload_over_the_size_cap_is_refused(tmp_path: Path) -> None:
    noise = random.Random(0).randbytes(20_000)  # incompressible
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER), ("noise.bin", noise)])
    with pytest.raises(ValidationError, match="the limit is"):
        validate_zip(archive, ZipLimits(max_zip_bytes=1000))


def test_too_many_entries_are_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER)] + [(f"f{i}", b"") for i in range(20)])
    with pytest.raises(ValidationError, match="the zip has 21 entries; the limit is 10"):
        validate_zip(archive, ZipLimits(max_entries=10))


def test_declared_decompressed_total_over_the_cap_is_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER), ("zeros.bin", bytes(1_000_000))])
    with pytest.raises(ValidationError, match="would decompress to more than"):
        validate_zip(archive, ZipLimits(max_total_bytes=500_000))


def test_one_file_over_the_per_file_cap_is_refused(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER), ("zeros.bin", bytes(1_000_000))])
    with pytest.raises(ValidationError, match=r"'zeros\.bin' is 1\.0 MiB uncompressed"):
        validate_zip(archive, ZipLimits(max_file_bytes=100_000))


def test_a_zip_bomb_lying_about_its_size_is_caught_while_decompressing(tmp_path: Path) -> None:
    """The directory claims 100 bytes; the data inflates to 10 MB. Reading stops at the declared size."""
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER), ("bomb.bin", bytes(10_000_000))])
    patch_member(archive, "bomb.bin", local_offset=22, central_offset=24, fmt="<I", value=100)
    with pytest.raises(ValidationError, match=r"'bomb\.bin' is corrupt"):
        validate_zip(archive)


def test_player_at_the_top_level_is_accepted(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER), ("weights/model.onnx", b"\x00\x01")])
    validated = validate_zip(archive)
    assert [e.path for e in validated.entries] == ["player.py", "weights/model.onnx"]
    assert validated.stripped_prefix == ""
    assert validated.has_requirements is False


def test_a_single_top_level_folder_is_stripped(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "upload.zip",
        [("my_bot/", b""), ("my_bot/player.py", PLAYER), ("my_bot/requirements.txt", b"numpy\n")],
    )
    validated = validate_zip(archive)
    assert [e.path for e in validated.entries] == ["player.py", "requirements.txt"]
    assert validated.stripped_prefix == "my_bot/"
    assert validated.has_requirements is True


def test_content_hash_ignores_the_top_folder_name_and_entry_order(tmp_path: Path) -> None:
    one = make_zip(tmp_path / "one.zip", [("player.py", PLAYER), ("data.txt", b"42")])
    two = make_zip(tmp_path / "two.zip", [("bot/data.txt", b"42"), ("bot/player.py", PLAYER)])
    three = make_zip(tmp_path / "three.zip", [("player.py", PLAYER), ("data.txt", b"43")])
    assert validate_zip(one).content_hash == validate_zip(two).content_hash
    assert validate_zip(one).content_hash != validate_zip(three).content_hash


def test_macos_metadata_is_ignored(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "upload.zip",
        [("bot/player.py", PLAYER), ("__MACOSX/bot/._player.py", b"junk"), ("bot/.DS_Store", b"junk")],
    )
    assert [e.path for e in validate_zip(archive).entries] == ["player.py"]


def test_local_backend_extracts_into_a_folder_named_by_content_hash(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "upload.zip", [("bot/player.py", PLAYER), ("bot/lib/helper.py", b"X = 1\n")]
    )
    result = build_submission(archive, backend="local", work_dir=tmp_path / "work")
    assert result.ok, result.error
    folder = Path(result.agent_ref)
    assert folder == tmp_path / "work" / result.content_hash
    assert (folder / "player.py").read_bytes() == PLAYER
    assert (folder / "lib" / "helper.py").read_text() == "X = 1\n"
    assert stat.S_IMODE((folder / "player.py").stat().st_mode) == 0o644


def test_local_backend_reuses_an_earlier_extraction(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER)])
    first = build_submission(archive, backend="local", work_dir=tmp_path / "work")
    second = build_submission(archive, backend="local", work_dir=tmp_path / "work")
    assert (first.cached, second.cached) == (False, True)
    assert first.agent_ref == second.agent_ref


def _build_at_once(args: tuple[str, str, object]) -> tuple[bool, str, str]:
    archive, work, barrier = args
    barrier.wait()  # type: ignore[attr-defined]
    result = build_submission(Path(archive), backend="local", work_dir=Path(work))
    return result.ok, result.agent_ref, result.error


def test_the_same_content_built_by_many_processes_at_once_is_extracted_once(tmp_path: Path) -> None:
    import multiprocessing

    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER), ("lib/data.bin", b"x" * 200_000)])
    with multiprocessing.Manager() as manager:
        barrier = manager.Barrier(8)
        with multiprocessing.get_context("fork").Pool(8) as pool:
            results = pool.map(_build_at_once, [(str(archive), str(tmp_path / "work"), barrier)] * 8)
    assert all(ok for ok, _, _ in results), [error for _, _, error in results]
    assert len({ref for _, ref, _ in results}) == 1
    assert [p.name for p in (tmp_path / "work").iterdir()] == [Path(results[0][1]).name]  # no leftovers


def test_build_submission_reports_a_bad_zip_without_raising(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("bot.py", PLAYER)])
    result = build_submission(archive, backend="local", work_dir=tmp_path / "work")
    assert result.ok is False
    assert result.error_kind == "INVALID_SUBMISSION"
    assert result.error.startswith("player.py is missing")
    assert not (tmp_path / "work").exists()


@pytest.mark.parametrize("entry", ["main.cpp", "main.js"])
def test_a_cpp_or_javascript_entry_file_is_an_agent_too(entry: str, tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [(f"bot/{entry}", b"// agent\n"), ("bot/util.txt", b"x")])
    validated = validate_zip(archive)
    assert [e.path for e in validated.entries] == [entry, "util.txt"]
    assert validated.stripped_prefix == "bot/"


def test_the_missing_entry_message_names_every_language(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("bot.rs", b"fn main() {}")])
    with pytest.raises(ValidationError) as refused:
        validate_zip(archive)
    message = str(refused.value)
    assert all(name in message for name in ("player.py", "main.py", "main.cpp", "main.js")), message


GIT_REFUSED_NAMES = [
    ".git/config",
    ".GIT/config",
    ".Git/hooks/post-checkout",
    "lib/.gIt/config",
    ".git",  # a file named .git (a gitfile pointing elsewhere)
    ".git./config",  # Windows drops trailing dots and spaces
    ".git . ./config",
    ".git ",
    "GIT~1/config",  # the NTFS 8.3 short name of .git
    "git~1/config",
    ".git::$INDEX_ALLOCATION/config",  # an NTFS alternate data stream
    ".g\u200cit/config",  # HFS+ ignores zero-width code points
    "\ufeff.GIT/config",
    ".gi\u206at/hooks/x",
    "__MACOSX/.GIT/config",  # ignored by the build, but the publisher extracts every entry
]


@pytest.mark.parametrize("name", GIT_REFUSED_NAMES)
def test_every_path_git_refuses_is_refused_at_upload(name: str, tmp_path: Path) -> None:
    """git's verify_path (core.protectNTFS and protectHFS rules) refuses these; a revision holding one could
    never be published, and on a case-insensitive checkout it would write into the repository's .git."""
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER), (name, b"[core]\n")])
    with pytest.raises(ValidationError, match="inside a git folder"):
        validate_zip(archive)


@pytest.mark.parametrize("name", [".gitignore", ".github/workflows/ci.yml", "my.git/x", "git~2/x", ".gitx"])
def test_names_git_accepts_are_accepted(name: str, tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "upload.zip", [("player.py", PLAYER), (name, b"x")])
    assert name in {e.path for e in validate_zip(archive).entries}
