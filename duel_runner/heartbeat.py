"""Keeping a claimed job's lease alive while a worker is busy with it."""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from django.conf import settings
from django.db import DatabaseError, connection

from core.actions import extend_lease
from core.models import LeasedJob

log = logging.getLogger(__name__)


class Heartbeat:
    """Context manager: a daemon thread extends the lease every ``HEARTBEAT_SECONDS``.

    If the claim is lost (the reaper re-queued the job after a long stall), ``lost`` becomes True; the
    work may still finish and its result is accepted only if nobody recorded one first.
    """

    def __init__(self, model: type[LeasedJob], job_id: int, worker: str, attempt: int) -> None:
        self.model = model
        self.job_id = job_id
        self.worker = worker
        self.attempt = attempt
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-{model.__name__}-{job_id}", daemon=True
        )

    def _run(self) -> None:
        try:
            while not self._stop.wait(settings.HEARTBEAT_SECONDS):
                try:
                    if not extend_lease(self.model, self.job_id, self.worker, self.attempt):
                        self.lost = True
                        log.warning("lost the lease of %s %s", self.model.__name__, self.job_id)
                        return
                except DatabaseError as exc:  # keep trying: the lease is long enough to ride out a blip
                    log.warning(
                        "could not extend the lease of %s %s: %s", self.model.__name__, self.job_id, exc
                    )
                    connection.close()
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=2)  # never hold up the task for a heartbeat stuck on a lock
