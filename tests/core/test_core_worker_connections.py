"""A Celery worker's database connection outlives its tasks (``core.celery``, ``core.worker``).

Celery's Django fix-up closed every connection before and after each task, so each duel and each rating
round opened a PostgreSQL session of its own. These tests drive the fix-up a worker installs (the real
``DjangoWorkerFixup``, built from the app's configuration as a worker start builds it) and the worker's own
handlers around a task, and read the backend's pid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest
from celery.fixups.django import DjangoWorkerFixup
from django.db import connection

from core.celery import app
from core.worker import close_old_connections_around_task

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="reads the PostgreSQL backend pid")


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


@pytest.fixture
def worker_fixup() -> Iterator[Callable[[int], DjangoWorkerFixup]]:
    """``worker_fixup(max_age)``: the connection closed, ``DATABASE_CONN_MAX_AGE`` set to ``max_age`` (read
    when a connection opens) and the fix-up a worker installs; the setting is restored after the test."""
    before = connection.settings_dict["CONN_MAX_AGE"]

    def start(max_age: int) -> DjangoWorkerFixup:
        connection.close()
        connection.settings_dict["CONN_MAX_AGE"] = max_age
        return DjangoWorkerFixup(app)

    yield start
    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = before


def run_task_hooks(fixup: DjangoWorkerFixup) -> None:
    """What a worker runs around one task: the fix-up's and ours, before and after."""
    task = SimpleNamespace(request=SimpleNamespace(is_eager=False))
    for hook in (fixup.on_task_prerun, close_old_connections_around_task):
        hook(sender=task)
    backend_pid()  # the task's queries
    for hook in (fixup.on_task_postrun, close_old_connections_around_task):
        hook(sender=task)


@pytest.mark.django_db(transaction=True)
def test_a_worker_keeps_its_connection_across_tasks(worker_fixup):
    fixup = worker_fixup(600)
    first = backend_pid()
    for _ in range(3):
        run_task_hooks(fixup)
    assert backend_pid() == first


@pytest.mark.django_db(transaction=True)
def test_with_no_max_age_each_task_closes_its_connection(worker_fixup):
    fixup = worker_fixup(0)
    first = backend_pid()
    run_task_hooks(fixup)
    assert connection.connection is None  # closed after the task, as before
    assert backend_pid() != first


@pytest.mark.django_db(transaction=True)
def test_a_broken_connection_is_replaced_at_the_next_task(worker_fixup):
    fixup = worker_fixup(600)
    first = backend_pid()
    with connection.cursor() as cursor:  # another session ends this one, as PostgreSQL or a proxy may
        cursor.execute("SELECT 1")
    from django.db import connections

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [first])
    finally:
        other.close()
    run_task_hooks(fixup)
    assert backend_pid() != first


@pytest.mark.django_db
def test_a_connection_inside_a_transaction_is_left_to_whoever_opened_it():
    # A task's hooks running inside a caller's transaction (here the test's own) must not end it: the
    # connection is past its age (autocommit off, CONN_MAX_AGE 0 here), and Django would mark the
    # transaction for rollback instead of closing it, so the caller's next query would fail.
    assert connection.in_atomic_block  # the test's own transaction
    first = backend_pid()
    close_old_connections_around_task(sender=SimpleNamespace(request=SimpleNamespace(is_eager=False)))
    assert not connection.needs_rollback
    assert backend_pid() == first  # the transaction goes on
