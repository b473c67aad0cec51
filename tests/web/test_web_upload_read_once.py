"""An upload's archive is read once on its way in: the form (or the API) validates the request's file with
``agent_uploads.upload.read_upload`` and hands the result to ``core.actions.submit_revision``, which copies
and stores the bytes without opening the zip again; the language shown, the syntax check, the agent format
and the local sandbox's refusal all come from that one read. Counted with the real ``zipfile`` and the
real directory scan, each wrapped to count its calls."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agent_uploads import zip_validation
from core.actions import submit_revision
from core.management.commands.load_example_players import EXAMPLES_DIR, zip_folder
from core.models import Revision
from tests.zips import zip_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def zip_reads(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times a zip is opened for reading, and its central directory streamed."""
    counts = {"opened": 0, "scanned": 0}
    real_init = zipfile.ZipFile.__init__
    real_scan = zip_validation.scan_directory

    def counting_init(self, file, mode="r", *args, **kwargs) -> None:
        if mode == "r":
            counts["opened"] += 1
        real_init(self, file, mode, *args, **kwargs)

    def counting_scan(*args, **kwargs):
        counts["scanned"] += 1
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "__init__", counting_init)
    monkeypatch.setattr(zip_validation, "scan_directory", counting_scan)
    return counts


def test_the_upload_page_reads_the_zip_once(alice_client, env, zip_reads) -> None:
    data = zip_folder(EXAMPLES_DIR / "random")
    zip_reads.update(opened=0, scanned=0)
    response = alice_client.post(
        reverse("web:upload"),
        {"environment": env.slug, "name": "once-bot", "file": SimpleUploadedFile("r.zip", data)},
        follow=True,
    )
    assert response.redirect_chain, response.content.decode()[:2000]
    assert zip_reads == {"opened": 1, "scanned": 1}
    assert "Detected: Python agent (player.py" in response.content.decode()
    assert Revision.objects.get(competitor__name="once-bot").zip_size == len(data)


def test_the_api_reads_the_zip_once_and_keeps_the_rl_arena_format(client, alice, env, zip_reads) -> None:
    client.force_login(alice)
    data = zip_bytes({"player.py": "class Player:\n    pass\n", "environment.yml": "dependencies: []\n"})
    zip_reads.update(opened=0, scanned=0)
    response = client.post(
        "/api/revisions/",
        {"environment": env.slug, "competitor_name": "rl-bot", "file": SimpleUploadedFile("b.zip", data)},
    )
    assert response.status_code == 201, response.content
    assert zip_reads == {"opened": 1, "scanned": 1}
    assert Revision.objects.get(competitor__name="rl-bot").agent_format == "rl-arena"


def test_a_local_sandbox_reads_the_package_files_from_that_one_read(
    alice_client, env, settings, zip_reads
) -> None:
    settings.SANDBOX = "local"
    data = zip_bytes({"player.py": "class Player:\n    pass\n", "requirements.txt": "torch==2.1\n"})
    zip_reads.update(opened=0, scanned=0)
    response = alice_client.post(
        reverse("web:upload"),
        {"environment": env.slug, "name": "torch-bot", "file": SimpleUploadedFile("t.zip", data)},
    )
    assert response.status_code == 400
    assert "Not available here: requirements.txt: torch==2.1" in response.content.decode()
    assert zip_reads == {"opened": 1, "scanned": 1}


def test_submit_revision_reads_a_zip_it_was_given_once(env, alice, zip_reads) -> None:
    data = zip_folder(EXAMPLES_DIR / "random")
    zip_reads.update(opened=0, scanned=0)
    revision = submit_revision(alice, env.slug, "direct-bot", data)
    assert revision.version == 1
    assert zip_reads == {"opened": 1, "scanned": 1}


def test_a_zip_the_validator_refuses_still_gets_its_syntax_error_first(alice_client, env) -> None:
    """Refused for its structure (a file twice) and with a syntax error: the syntax error is told first,
    as before the upload was read once."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("player.py", "class Player\n")
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr("player.py", "class Player\n")
    response = alice_client.post(
        reverse("web:upload"),
        {"environment": env.slug, "name": "twice-bot", "file": SimpleUploadedFile("d.zip", buf.getvalue())},
    )
    assert response.status_code == 400
    assert "Python cannot compile your agent: player.py, line 1" in response.content.decode()
    assert not Revision.objects.exists()
