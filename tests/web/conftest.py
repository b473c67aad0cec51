"""Fixtures for the web tests: users, a ranked game with duels, logged-in clients."""

from __future__ import annotations

import os

# The suite's pytest config may not name the settings yet; the web tests import models at collection.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django
import pytest

django.setup()


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    """Each test stores uploads in its own DATA_DIR and sends task hints to an in-memory broker."""
    from core.celery import app

    path = tmp_path / "data"
    path.mkdir()
    settings.DATA_DIR = path
    app.conf.broker_url = "memory://"
    app.conf.broker_transport_options = {}
    app._pool = None
    app.amqp._producer_pool = None
    return path


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    """Rate-limit counters live in the cache: every test starts from zero."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def env(db):
    """The Connect Four environment row."""
    from tests.web import factories

    return factories.environment("connect-four")


@pytest.fixture
def alice(db):
    """A user with a team and a GitHub handle."""
    from tests.web import factories

    return factories.user("alice@example.com", display_name="Alice", team="Blue", github="alice")


@pytest.fixture
def bob(db):
    """Another user."""
    from tests.web import factories

    return factories.user("bob@example.com", display_name="Bob")


@pytest.fixture
def staff(db):
    """A staff member."""
    from tests.web import factories

    return factories.user("staff@example.com", display_name="Staff", is_staff=True)


@pytest.fixture
def alice_client(client, alice):
    """A test client logged in as Alice."""
    client.force_login(alice)
    return client


@pytest.fixture
def ranked(env, alice, bob):
    """Five rated competitors (three Alice's, two Bob's) that all played each other, plus a tournament."""
    from tests.web import factories

    comps = []
    for i, (owner, name) in enumerate(
        [(alice, "minimax"), (bob, "random"), (alice, "greedy"), (bob, "mcts"), (alice, "alphabeta")]
    ):
        comp = factories.competitor(owner, env, name, is_public=(i % 2 == 0))
        factories.rate(comp, 30 - 2.5 * i, 1.5 + 0.4 * i, history=6)
        comps.append(comp)
    duels = [
        factories.duel(comps[a], comps[b], num_matches=2)
        for a in range(len(comps))
        for b in range(a + 1, len(comps))
    ]
    factories.tournament(env, comps[:4])
    return {"competitors": comps, "duels": duels}
