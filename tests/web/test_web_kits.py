"""What a new agent author downloads: each game's starter kit (a valid agent as it is), the guide, and
the light client's source package."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.models import Environment, Revision
from run_duel.api import LaunchSpec, get_sandbox, play_duel, smoke_test
from tests.web import factories

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
GAMES = ["connect-four", "goofspiel", "leduc-holdem", "quarto", "tic-tac-toe"]


@pytest.fixture
def games(db):
    factories.environment("connect-four")  # syncs every game
    return {e.slug: e for e in Environment.objects.filter(is_active=True)}


def _kit(client, slug: str) -> zipfile.ZipFile:
    response = client.get(reverse("web:starter-kit", args=[slug]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{slug}-starter.zip"'
    return zipfile.ZipFile(io.BytesIO(response.content))


@pytest.mark.parametrize("slug", GAMES)
def test_each_game_page_offers_its_starter_kit(client, games, slug):
    html = client.get(reverse("web:game", args=[slug])).content.decode()
    assert f'href="{reverse("web:starter-kit", args=[slug])}" download data-testid="starter-kit"' in html
    kit = _kit(client, slug)
    top = f"{slug}-starter"
    assert sorted(kit.namelist()) == sorted(
        f"{top}/{name}" for name in ("README.md", "RULES.md", "player.py", "requirements.txt")
    )
    readme = kit.read(f"{top}/README.md").decode()
    assert "pip install http://testserver/downloads/rl-arena-client.zip" in readme
    assert f"rl-arena check --env {slug} ." in readme
    assert f"rl-arena duel --env {slug} . random" in readme
    assert f"rl-arena submit {slug} my-bot ." in readme
    assert "&#x27;" not in readme and "&lt;" not in readme  # Markdown, not HTML-escaped
    rules = kit.read(f"{top}/RULES.md").decode()
    assert games[slug].description.strip() in rules
    requirements = kit.read(f"{top}/requirements.txt").decode().splitlines()
    assert all(line.startswith("#") for line in requirements if line.strip())
    player = kit.read(f"{top}/player.py").decode()
    assert "class Player" in player and "valid_actions" in player


def test_the_same_kit_is_the_same_bytes(client, games):
    first = client.get(reverse("web:starter-kit", args=["connect-four"])).content
    assert client.get(reverse("web:starter-kit", args=["connect-four"])).content == first


@pytest.mark.parametrize("slug", GAMES)
def test_a_downloaded_kit_passes_the_smoke_test_and_beats_random(client, games, slug, tmp_path):
    _kit(client, slug).extractall(tmp_path)
    folder = tmp_path / f"{slug}-starter"
    sandbox = get_sandbox("local")
    try:
        result = smoke_test(slug, sandbox, LaunchSpec(agent=str(folder)))
        assert result.ok, result.reason
        duel = play_duel(
            slug,
            sandbox,
            LaunchSpec(agent=str(folder)),
            LaunchSpec(agent=str(REPO / "example_players" / "random")),
            matches=40,  # chance games: 10 matches once ended level (5.0 to 5.0) in a full run
        )
    finally:
        sandbox.close()
    assert duel["player_1_errors"] == 0 and duel["other_errors"] == 0
    assert duel["player_1_score"] > duel["player_2_score"]  # it plays sensibly, not just legally


def test_a_downloaded_kit_uploads_unchanged(client, games, alice):
    data = client.get(reverse("web:starter-kit", args=["connect-four"])).content
    client.force_login(alice)
    response = client.post(
        reverse("web:upload"),
        {"environment": "connect-four", "name": "first-bot", "file": SimpleUploadedFile("k.zip", data)},
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert Revision.objects.get(competitor__name="first-bot").state == Revision.State.UPLOADED


def test_the_guide_covers_protocol_limits_errors_and_local_tests(client, games, settings):
    response = client.get(reverse("web:guide"))
    assert response.status_code == 200
    html = response.content.decode()
    for slug in GAMES:
        assert reverse("web:starter-kit", args=[slug]) in html
    for kind in ("TIMEOUT", "CRASH", "INVALID_ACTION", "MEMORY_LIMIT", "OUTPUT_LIMIT", "BAD_OUTPUT"):
        assert f"<code>{kind}</code>" in html
    assert "def step(self, state, valid_actions, prev_reward):" in html
    assert "numpy array of shape (6, 7), int8" in html  # derived from the rules, per game
    assert "integers 0..6 (7 in all)" in html
    assert f"at most <strong>{settings.SUBMISSION_MAX_BYTES // 2**20} MB</strong>" in html
    assert "pip install http://testserver/downloads/rl-arena-client.zip" in html
    assert "rl-arena tournament --env connect-four" in html
    assert "rl-arena submit connect-four my-bot ./my_agent" in html
    assert 'id="client"' in html


def test_the_guide_shows_each_games_time_bank_and_what_kaggle_agents_are_told(client, games):
    from environments import get_info

    html = client.get(reverse("web:guide")).content.decode()
    assert 'id="time-bank"' in html
    bank = get_info("connect-four").time_bank_s
    assert f'<td class="num">{bank:g} s</td>' in html
    assert "remainingOverageTime" in html and "actTimeout" in html
    assert "<code>submission.py</code>" in html and "last function" in html


def test_the_guide_is_in_the_header_of_every_page(client, games):
    html = client.get(reverse("web:home")).content.decode()
    assert f'<a href="{reverse("web:guide")}"' in html


def test_the_client_package_is_served_with_the_servers_referee_inside(client, db):
    response = client.get(reverse("web:client-download"))
    assert response.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    for name in (
        "rl-arena-client/pyproject.toml",
        "rl-arena-client/README.md",
        "rl-arena-client/rl_arena_client/cli.py",
        "rl-arena-client/rl_arena_client/opponents/random/player.py",
        "rl-arena-client/rl_arena_client/opponents/minimax/player.py",
        "rl-arena-client/run_duel/referee.py",
        "rl-arena-client/run_duel/harness/arena_harness.py",
        "rl-arena-client/environments/connect_four/info.yml",
        "rl-arena-client/tournament_manager/ladder.py",
    ):
        assert name in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    served = zipfile.ZipFile(io.BytesIO(response.content)).read("rl-arena-client/run_duel/referee.py")
    assert served == (REPO / "run_duel" / "referee.py").read_bytes()  # the server's own file
