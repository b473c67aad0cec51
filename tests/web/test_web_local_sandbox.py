"""A server whose agents run in the local sandbox (SANDBOX=local, no Docker) refuses at upload what it cannot
run as asked (C++, JavaScript, packages other than numpy), naming it, on the upload form, in the API and
through ``rl-arena submit``; its upload page promises no compile nor install; the local build refuses the
same (``agent_uploads.local_support``)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient
from rl_arena_client import cli

from builder import build_submission
from core.models import Competitor, Revision
from tests.web.factories import PASSWORD

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
PLAYER = (REPO / "example_players" / "random" / "player.py").read_text()
CPP_REFUSAL = "C++ agents (main.cpp) are compiled and run only in the Docker sandbox"


def _zip_bytes(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def _upload(client, env, files: dict[str, str], name: str = "local-bot"):
    upload = SimpleUploadedFile("bot.zip", _zip_bytes(files), content_type="application/zip")
    return client.post(
        reverse("web:upload"),
        {"environment": env.slug, "name": name, "file": upload, "is_public": ""},
        follow=True,
    )


@pytest.fixture
def local_server(settings):
    settings.SANDBOX = "local"
    return settings


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"main.cpp": '#include "arena.hpp"\nint main() { return 0; }\n'}, CPP_REFUSAL),
        (
            {"main.js": "module.exports = class {};\n"},
            "JavaScript agents (main.js) are compiled and run only",
        ),
        (
            {"player.py": PLAYER, "requirements.txt": "onnxruntime==1.17.1\n# a comment\n"},
            "onnxruntime==1.17.1",
        ),
        (
            {"player.py": PLAYER, "environment.yml": "dependencies:\n  - numpy=1.17.2\n  - pytorch\n"},
            "environment.yml: torch",
        ),
        ({"player.py": PLAYER, "requirements.txt": "no-such-package-anywhere\n"}, "no-such-package-anywhere"),
    ],
)
def test_the_upload_form_refuses_what_the_local_sandbox_cannot_run_naming_it(
    local_server, alice_client, env, files, named
):
    response = _upload(alice_client, env, files)
    assert response.status_code == 400
    page = response.content.decode()
    assert named in page, page[:4000]
    assert "local sandbox" in page
    assert not Competitor.objects.filter(name="local-bot").exists()  # nothing stored, no build promised


def test_numpy_and_comment_only_requirements_are_accepted_on_a_local_server(local_server, alice_client, env):
    files = {
        "player.py": PLAYER,
        "requirements.txt": "# numpy is always there\nnumpy\n",
        "environment.yml": "dependencies:\n  - python=3.7\n  - pip=19.1.1\n  - numpy=1.17.2\n",
    }
    response = _upload(alice_client, env, files)
    assert response.status_code == 200
    assert Revision.objects.filter(competitor__name="local-bot").exists()


def test_a_docker_server_accepts_them_all(settings, alice_client, env):
    settings.SANDBOX = "docker"
    response = _upload(alice_client, env, {"main.cpp": '#include "arena.hpp"\n'}, name="cpp-bot")
    assert response.status_code == 200
    assert Revision.objects.filter(competitor__name="cpp-bot").exists()


def test_the_local_upload_page_promises_no_compile_nor_install(local_server, alice_client, settings):
    page = " ".join(alice_client.get(reverse("web:upload")).content.decode().split())
    assert "local sandbox" in page
    assert "compiled at build time" not in page and "installed from wheels" not in page
    settings.SANDBOX = "docker"
    page = " ".join(alice_client.get(reverse("web:upload")).content.decode().split())
    assert "compiled at build time" in page and "installed from wheels" in page


def test_the_guide_of_a_local_server_says_it_installs_no_packages(local_server, client, env, settings):
    assert 'data-testid="guide-local-sandbox"' in client.get(reverse("web:guide")).content.decode()
    settings.SANDBOX = "docker"
    assert 'data-testid="guide-local-sandbox"' not in client.get(reverse("web:guide")).content.decode()


def test_the_api_refuses_with_the_same_message(local_server, alice, env):
    api = APIClient()
    token = api.post("/api/auth/token/", {"email": alice.email, "password": PASSWORD}, format="json")
    api.credentials(HTTP_AUTHORIZATION="Token " + token.json()["token"])
    upload = SimpleUploadedFile(
        "bot.zip", _zip_bytes({"player.py": PLAYER, "requirements.txt": "torch\n"}), "application/zip"
    )
    response = api.post(
        "/api/revisions/",
        {"environment": env.slug, "competitor_name": "api-bot", "file": upload},
        format="multipart",
    )
    assert response.status_code == 400
    assert "requirements.txt: torch" in str(response.json())
    assert not Competitor.objects.filter(name="api-bot").exists()


def test_rl_arena_submit_prints_the_servers_refusal(
    local_server, alice, env, live_server, monkeypatch, tmp_path, capsys
):
    monkeypatch.setenv("RL_ARENA_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setenv("RL_ARENA_SERVER", live_server.url)
    monkeypatch.setenv("RL_ARENA_PASSWORD", PASSWORD)
    monkeypatch.delenv("RL_ARENA_TOKEN", raising=False)
    assert cli.main(["login", "--email", alice.email], out=io.StringIO()) == 0
    code = cli.main(
        ["submit", "connect-four", "cpp-bot", str(REPO / "example_players" / "random_cpp"), "--no-wait"],
        out=io.StringIO(),
    )
    assert code == 1
    assert CPP_REFUSAL in capsys.readouterr().err
    assert not Competitor.objects.filter(name="cpp-bot").exists()


def _archive(tmp_path: Path, files: dict[str, str]) -> Path:
    path = tmp_path / "agent.zip"
    path.write_bytes(_zip_bytes(files))
    return path


def test_the_local_build_refuses_packages_and_notes_the_numpy_it_uses(tmp_path):
    refused = build_submission(
        _archive(tmp_path, {"player.py": PLAYER, "requirements.txt": "nosuchpackage-xyz==1.0\n"}),
        backend="local",
        work_dir=tmp_path / "work",
    )
    assert (refused.ok, refused.error_kind) == (False, "BUILD_FAILED")
    assert "requirements.txt: nosuchpackage-xyz==1.0" in refused.error and "local sandbox" in refused.error
    built = build_submission(
        _archive(tmp_path, {"player.py": PLAYER, "requirements.txt": "numpy==1.17.2\n"}),
        backend="local",
        work_dir=tmp_path / "work",
    )
    assert built.ok, built.error
    assert "requirements.txt: numpy==1.17.2: the local sandbox's own numpy " in built.log
    assert any("the local sandbox's own numpy" in note for note in built.package_notes)
