"""Fixtures for the publisher tests: a real bare repository in a temporary folder and public revisions
with real zip files under DATA_DIR."""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django
import pytest

django.setup()

from pub_helpers import git  # noqa: E402

from tests.zips import zip_bytes  # noqa: E402


@pytest.fixture
def pub_settings(settings: Any, tmp_path: Path) -> Any:
    """A private DATA_DIR, an in-memory broker and a fresh bare repository as the publishing remote."""
    from core.celery import app

    app.conf.broker_url = "memory://"
    app._pool = None
    app.amqp._producer_pool = None
    settings.DATA_DIR = tmp_path / "data"
    settings.DATA_DIR.mkdir()
    remote = tmp_path / "public.git"
    git("init", "--quiet", "--bare", "--initial-branch=main", str(remote), cwd=tmp_path)
    settings.PUBLISH_REMOTE = str(remote)
    settings.PUBLISH_RETRY_SECONDS = 0
    return settings


@pytest.fixture
def clone(pub_settings: Any, tmp_path: Path) -> Callable[[], Path]:
    """Clone the remote afresh (returns the clone's folder)."""

    def make() -> Path:
        dest = tmp_path / f"clone-{uuid.uuid4().hex[:6]}"
        git("clone", "--quiet", pub_settings.PUBLISH_REMOTE, str(dest), cwd=tmp_path)
        return dest

    return make


@pytest.fixture
def make_revision(pub_settings: Any, db: Any) -> Callable[..., Any]:
    """Factory: an ELIGIBLE revision with a real zip; public unless told otherwise."""
    from core.models import Competitor, Environment, Revision, User

    env, _ = Environment.objects.get_or_create(
        slug="tic-tac-toe",
        defaults={
            "name": "Tic-tac-toe",
            "matches_per_duel": 10,
            "smoke_test_matches": 2,
            "move_time_limit": 1.0,
            "init_time_limit": 5.0,
            "memory_limit_mb": 256,
            "cpu_limit": 0.5,
        },
    )

    def make(
        competitor: Any = None,
        *,
        public: bool = True,
        files: dict[str, str] | None = None,
        name: str = "minimax",
        owner_name: str = "Ada",
        state: str = "ELIGIBLE",
    ) -> Any:
        if competitor is None:
            owner = User.objects.create_user(
                email=f"u{uuid.uuid4().hex[:8]}@example.com", display_name=owner_name
            )
            competitor = Competitor.objects.create(owner=owner, environment=env, name=name, is_public=public)
        version = competitor.next_version
        competitor.next_version += 1
        competitor.save(update_fields=["next_version"])
        rel = f"submissions/{competitor.pk}/{version}.zip"
        path = Path(pub_settings.DATA_DIR) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        content = zip_bytes(files or {"player.py": f"# {name} v{version}\n"})
        path.write_bytes(content)
        return Revision.objects.create(
            competitor=competitor,
            version=version,
            state=state,
            zip_path=rel,
            content_hash=hashlib.sha256(content).hexdigest(),  # the publisher reads only verified bytes
            agent_ref="x",
            is_public=public,
            publish_state="PENDING" if public else "PRIVATE",
        )

    return make
