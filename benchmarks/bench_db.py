"""A benchmark's private PostgreSQL database: made fresh and migrated before a run, dropped after it.

``args`` carries ``pg`` (a server URL without a database) and ``db`` (the database's name), as the
benchmarks' ``--pg`` and ``--db`` options give them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def recreate_database(args: argparse.Namespace, env: dict[str, str]) -> None:
    """Drop and create ``--db`` and migrate it (``env`` points the settings at it)."""
    import psycopg

    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{args.db}"')
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0", "--skip-checks"],
        cwd=REPO,
        check=True,
        env={**os.environ, **env},
    )


def drop_database(args: argparse.Namespace) -> None:
    """Drop ``--db`` (closing this process's connection first)."""
    import psycopg
    from django.db import connections

    connections.close_all()
    with psycopg.connect(f"{args.pg}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')
