"""Fixtures for notifications and game records: an in-memory broker whose messages the tests can run."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django
import pytest

django.setup()


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    """Each test gets its own DATA_DIR and an empty in-memory broker."""
    from records_testlib import drain_broker, use_memory_broker

    path = tmp_path / "data"
    path.mkdir()
    settings.DATA_DIR = path
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    use_memory_broker()
    drain_broker()
    return path


@pytest.fixture
def env(db):
    """The Connect Four environment row."""
    from tests.web import factories

    return factories.environment("connect-four")


@pytest.fixture
def alice(db):
    """A user who wants e-mail."""
    from tests.web import factories

    return factories.user("alice@example.com", display_name="Alice")


@pytest.fixture
def bob(db):
    """Another user."""
    from tests.web import factories

    return factories.user("bob@example.com", display_name="Bob")
