"""Hostile archives are refused at upload, before anything opens them with ``zipfile``: a one-line message,
a 400, nothing stored, and (measured around the form's check) a few MiB of memory and reads instead of the
half gigabyte and 48 MiB of directory the web process used to spend."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile
from django.urls import reverse

from core.models import Revision
from tests.docker.hostile_zips import deep_path_zip, many_entries_zip
from web.forms import check_upload

pytestmark = pytest.mark.django_db
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def million_entries(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return many_entries_zip(tmp_path_factory.mktemp("hostile") / "million.zip")


def _rchar() -> int:
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


def test_the_upload_check_refuses_a_million_entries_in_bounded_memory(million_entries: Path) -> None:
    with open(million_entries, "rb") as fh:
        upload = UploadedFile(fh, name="million.zip", size=million_entries.stat().st_size)
        read_before = _rchar()
        tracemalloc.start()
        try:
            with pytest.raises(ValueError) as refused:
                check_upload(upload)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        read = _rchar() - read_before
    message = str(refused.value)
    assert message == (
        "This zip cannot be accepted: the zip has 1000000 entries; the limit is 2000 files and folders."
    )
    assert peak < 8 * MIB, peak
    assert read < 2 * MIB, read


def test_the_upload_page_refuses_a_million_entries_as_the_users_error(
    alice_client, env, million_entries
) -> None:
    response = alice_client.post(
        reverse("web:upload"),
        {
            "environment": env.slug,
            "name": "many-bot",
            "file": SimpleUploadedFile("many.zip", million_entries.read_bytes()),
        },
    )
    assert response.status_code == 400
    assert "the zip has 1000000 entries; the limit is 2000 files and folders" in response.content.decode()
    assert not Revision.objects.exists()


def test_the_api_refuses_a_path_1500_folders_deep_with_one_line(client, alice, env, tmp_path) -> None:
    client.force_login(alice)
    archive = deep_path_zip(tmp_path / "deep.zip")
    response = client.post(
        "/api/revisions/",
        {
            "environment": env.slug,
            "competitor_name": "deep-bot",
            "file": SimpleUploadedFile("deep.zip", archive.read_bytes()),
        },
    )
    assert response.status_code == 400
    (message,) = response.json()["file"]
    assert message.startswith("This zip cannot be accepted: the file name 'd/d/d/")
    assert message.endswith("is 1501 folders deep; the limit is 32.")
    assert "\n" not in message
    assert not Revision.objects.exists()


def _zip_bytes(files: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buf.getvalue()


def test_the_syntax_check_compiles_a_bounded_amount_of_source() -> None:
    """Once the compile budget is spent, later modules are left to the smoke test: the error in the last
    one is not looked for (200 modules of 1 MiB of dense code used to hold the request 333 s)."""
    from agent_uploads.python_check import MAX_TOTAL_SOURCE_BYTES, first_syntax_error

    player = b"class Player: ...\n"
    bad = b"def (:\n" + b"#" * 100
    filler = b"x = 1\n" * ((MAX_TOTAL_SOURCE_BYTES - len(player) - len(bad) // 2) // 6)
    spent = _zip_bytes({"player.py": player, "a.py": filler, "b.py": filler, "z.py": bad})
    with SimpleUploadedFile("spent.zip", spent).open() as upload:
        assert first_syntax_error(upload) is None
    within = _zip_bytes({"player.py": player, "z.py": bad})
    with SimpleUploadedFile("within.zip", within).open() as upload:
        assert (first_syntax_error(upload) or "").startswith("z.py, line 1")


def test_source_too_deep_for_the_compiler_is_the_uploaders_error(alice_client, env) -> None:
    archive = _zip_bytes({"player.py": b"x = " + b"-" * 100_000 + b"1\n"})
    response = alice_client.post(
        reverse("web:upload"),
        {"environment": env.slug, "name": "deep-bot", "file": SimpleUploadedFile("deep.zip", archive)},
    )
    assert response.status_code == 400
    assert "player.py: too deeply nested for Python to compile" in response.content.decode()
    assert not Revision.objects.exists()
