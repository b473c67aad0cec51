"""Keeping a claim alive while a worker is busy with it."""

from __future__ import annotations

import logging
import threading
from types import TracebackType

from django.conf import settings
from django.db import DatabaseError, connection

from core.actions.jobs import Claim, extend_lease
from core.models.jobs import FencedWork

log = logging.getLogger(__name__)


class Heartbeat:
    """Context manager: a daemon thread extends the claim's lease every ``HEARTBEAT_SECONDS`` (database
    time).

    When another worker claimed the job (the generation moved on) or it is over, ``lost`` becomes True and
    the thread stops; the work may finish, but its outcome is refused by the fenced actions. A database
    outage only delays heartbeats: the first one that gets through takes the job back, unless another
    worker claimed it meanwhile.
    """

    def __init__(self, model: type[FencedWork], claim: Claim) -> None:
        self.model = model
        self.claim = claim
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-{model.__name__}-{claim.job_id}", daemon=True
        )

    def _run(self) -> None:
        try:
            while not self._stop.wait(settings.HEARTBEAT_SECONDS):
                try:
                    if not extend_lease(self.model, self.claim):
                        self.lost = True
                        log.warning(
                            "%s %s: another worker holds it now, or it is over",
                            self.model.__name__,
                            self.claim.job_id,
                        )
                        return
                except DatabaseError as exc:  # keep trying: the first beat that gets through takes it back
                    log.warning("heartbeat of %s %s failed: %s", self.model.__name__, self.claim.job_id, exc)
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
