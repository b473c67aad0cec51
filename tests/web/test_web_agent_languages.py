"""What an owner sees of an agent's stack: the language the upload page detected from the entry file, and
the language and installed packages (with versions) a built revision records."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.actions import Claim, claim_build, finish_build
from core.models import Build, Revision
from tests.web import factories

pytestmark = pytest.mark.django_db


def _zip(files: dict[str, str], top: str = "") -> SimpleUploadedFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(top + name, text)
    return SimpleUploadedFile("bot.zip", buffer.getvalue(), content_type="application/zip")


PLAYER = "class Player:\n    def __init__(self, train_mode=False):\n        pass\n"


@pytest.mark.parametrize(
    ("files", "top", "detected"),
    [
        ({"player.py": PLAYER, "requirements.txt": "onnxruntime\n"}, "", "Detected: Python agent (player.py"),
        (
            {"main.py": "def agent(observation, configuration):\n    return 0\n"},
            "bot/",
            "Detected: Python agent (main.py",
        ),
        ({"main.cpp": '#include "arena.hpp"\n'}, "", "Detected: C++ agent (main.cpp"),
        ({"main.js": "module.exports = class {};\n"}, "my-bot/", "Detected: JavaScript agent (main.js"),
    ],
)
def test_the_upload_page_says_which_language_it_detected(alice_client, env, files, top, detected, settings):
    settings.SANDBOX = (
        "docker"  # a local-sandbox server refuses C++ and JavaScript (test_web_local_sandbox.py)
    )
    response = alice_client.post(
        reverse("web:upload"),
        {"environment": env.slug, "name": "stack-bot", "file": _zip(files, top), "is_public": ""},
        follow=True,
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert detected in page, page[:3000]


def test_the_upload_page_lists_the_entry_files_of_every_language(alice_client, env, settings):
    settings.SANDBOX = "docker"
    page = alice_client.get(reverse("web:upload")).content.decode()
    for entry in ("player.py", "main.py", "submission.py", "main.cpp", "main.js"):
        assert f"<code>{entry}</code>" in page


def _built(owner, env, language: str, packages: list[list[str]]) -> Revision:
    comp = factories.competitor(owner, env, state=Revision.State.UPLOADED)
    revision = comp.revisions.get()
    build = Build.objects.create(revision=revision)
    claim = Claim.of(claim_build(build.pk, worker="test"))
    assert finish_build(claim, ok=True, agent_ref="img", language=language, packages=packages)
    return Revision.objects.get(pk=revision.pk)


def test_a_built_revision_records_and_shows_its_language_and_packages(alice_client, alice, env):
    revision = _built(alice, env, "python", [["numpy", "2.4.6"], ["onnxruntime", "1.32.0"]])
    assert (revision.language, revision.packages) == (
        "python",
        [["numpy", "2.4.6"], ["onnxruntime", "1.32.0"]],
    )
    page = alice_client.get(reverse("web:revision", args=[revision.pk])).content.decode()
    assert 'data-testid="installed-packages"' in page
    assert "<td><code>onnxruntime</code></td><td>1.32.0</td>" in page
    assert "<td><code>numpy</code></td><td>2.4.6</td>" in page


def test_a_cpp_revision_says_it_was_compiled(alice_client, alice, env):
    revision = _built(alice, env, "cpp", [])
    page = alice_client.get(reverse("web:revision", args=[revision.pk])).content.decode()
    assert "C++ (<code>main.cpp</code>, compiled with g++ when it was built)" in page
    assert 'data-testid="installed-packages"' not in page
