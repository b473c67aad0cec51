"""Fixtures for the tournament manager's database tests: factories over the real core actions.

The pure tests of this folder need none of this; Django is configured here so the database tests can
import models at collection time (the database is whatever ``DATABASE_URL`` says: Postgres in CI).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django
import pytest

django.setup()

from tm_factories import add_revision  # noqa: E402


def use_memory_broker() -> None:
    """Point Celery at an in-memory broker so hints sent on commit go nowhere."""
    from core.celery import app

    app.conf.broker_url = "memory://"
    app.conf.broker_transport_options = {}
    app._pool = None
    app.amqp._producer_pool = None


def is_postgres() -> bool:
    """Whether the tests run against PostgreSQL."""
    from django.db import connection

    return connection.vendor == "postgresql"


@pytest.fixture
def tm_settings(settings: Any, tmp_path: Path) -> Any:
    """A private DATA_DIR, an empty cache and an in-memory broker for database tests."""
    from django.core.cache import cache

    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    cache.clear()
    use_memory_broker()
    return settings


@pytest.fixture
def hidden_env(tm_settings: Any, db: Any) -> Any:
    """The hidden-skill environment row."""
    from core.models import Environment

    return Environment.objects.create(
        slug="hidden-skill",
        name="Hidden skill",
        matches_per_duel=4,
        smoke_test_matches=2,
        move_time_limit=1.0,
        init_time_limit=5.0,
        memory_limit_mb=256,
        cpu_limit=0.5,
    )


@pytest.fixture
def make_competitor(hidden_env: Any) -> Callable[..., Any]:
    """Factory: a user's competitor with one ELIGIBLE revision (its current one)."""
    from core.models import Competitor, User

    def make(name: str | None = None, *, is_public: bool = False, env: Any = None) -> Any:
        owner = User.objects.create_user(email=f"u{uuid.uuid4().hex[:10]}@example.com", display_name="owner")
        competitor = Competitor.objects.create(
            owner=owner,
            environment=env or hidden_env,
            name=name or f"bot-{uuid.uuid4().hex[:6]}",
            is_public=is_public,
        )
        add_revision(competitor)
        return competitor

    return make
