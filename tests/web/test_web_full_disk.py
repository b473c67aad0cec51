"""A full disk under DATA_DIR: an upload is answered 507 (JSON for the API, the form's own error on the
site), nothing is stored and nothing is left behind; the same upload succeeds once there is room. A real
full file system: a 64 KiB tmpfs mounted over ``DATA_DIR/tmp``, where uploads land first (needs root)."""

from __future__ import annotations

import io
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.urls import reverse

from core import storage
from core.models import Revision
from tests.small_disk import small_tmpfs

pytestmark = pytest.mark.django_db


def _agent_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as zf:  # stored: the bytes do not shrink
        zf.writestr("player.py", "class Player:\n    def __init__(self, train_mode):\n        pass\n")
        zf.writestr("weights.bin", bytes(range(256)) * 1024)  # 256 KiB: more than the disk holds
    return buffer.getvalue()


@pytest.fixture
def full_disk(data_dir) -> Iterator[Path]:
    with small_tmpfs(storage.tmp_dir(), "64k") as folder:
        yield folder


def test_an_api_upload_on_a_full_disk_gets_a_json_507_and_stores_nothing(client, alice, env, full_disk):
    client.force_login(alice)
    upload = io.BytesIO(_agent_zip())
    upload.name = "bot.zip"
    response = client.post(
        reverse("web:api:revision-list"),
        {"environment": env.slug, "competitor_name": "full", "file": upload},
    )
    assert response.status_code == 507, response.content
    assert response["Content-Type"].startswith("application/json")
    assert "no disk space" in response.json()["detail"]
    assert not Revision.objects.exists()
    assert list(full_disk.iterdir()) == []  # the partial upload was removed


def test_the_upload_form_says_the_disk_is_full_and_the_next_try_works(client, alice, env, full_disk):
    client.force_login(alice)
    data = {"environment": env.slug, "name": "full", "agent_format": ""}

    def post():
        upload = io.BytesIO(_agent_zip())
        upload.name = "bot.zip"
        return client.post(reverse("web:upload"), {**data, "file": upload})

    response = post()
    assert response.status_code == 507
    assert "no disk space left for your upload" in response.content.decode()
    assert not Revision.objects.exists()
    subprocess.run(["umount", str(full_disk)], check=True)  # room again (DATA_DIR's own disk)
    assert post().status_code in (200, 302)
    assert Revision.objects.filter(competitor__name="full").exists()
