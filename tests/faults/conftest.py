"""Fixtures of the fault suite: the core suite's factories and real worker processes, plus proxies that
cut a worker off from PostgreSQL or the Docker engine.

The core suite's fixtures (``tests/core/conftest.py``) are loaded by path under their own module name and
re-exported, so both suites start workers, users and revisions the same way.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

CORE_TESTS = Path(__file__).resolve().parents[1] / "core"
sys.path.insert(0, str(CORE_TESTS))
_spec = importlib.util.spec_from_file_location("core_suite_fixtures", CORE_TESTS / "conftest.py")
assert _spec is not None and _spec.loader is not None
_core = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_core)
globals().update({name: value for name, value in vars(_core).items() if not name.startswith("_")})

from core_testlib import is_postgres, worker_database_url  # noqa: E402
from faultlib import PgProxy, pg_proxy  # noqa: E402


@pytest.fixture
def db_proxy(transactional_db: Any) -> Iterator[PgProxy]:
    """A cuttable proxy in front of the test database that can fail it at a chosen statement (PostgreSQL
    only)."""
    if not is_postgres():
        pytest.skip("cutting a worker off from its database needs PostgreSQL (SQLite is a file)")
    parts = urlsplit(worker_database_url())
    proxy = pg_proxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    yield proxy
    proxy.cut()
