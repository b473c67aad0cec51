"""The embedded broker: Kombu's filesystem transport, with messages written whole or not at all.

Kombu's filesystem channel creates a message file under its final name and then writes it, while a
consumer lists the folder and reads whatever files it finds, without taking the writer's lock. A consumer
that picks a file between its creation and its write reads an empty payload, and ``json.loads("")`` ended
the worker ("Unrecoverable error: JSONDecodeError"), which nothing restarted: the first-run arena stopped
building and playing without a sign.

Here a message is written under a hidden temporary name in the same folder (consumers ignore it: it does
not end in ``.<queue>.msg``) and renamed into place, which is atomic, so a consumer sees all of it or
nothing. A payload that still cannot be read (a file an older writer left, a disk fault) is logged and
dropped instead of ending the worker: messages are only hints, and the reaper re-sends any job's hint
from the database (``STALE_QUEUED_SECONDS``). An exchange table caught mid-rewrite is read again.

``core/celery.py`` registers this transport under the ``filesystem`` scheme, so ``filesystem://`` URLs
use it in every process of the platform.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from typing import Any

from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps

log = logging.getLogger(__name__)

#: Times an exchange table caught mid-rewrite is read again (5 ms apart).
TABLE_READ_TRIES = 20


class Channel(filesystem.Channel):
    """Atomic writes, and readers that survive an unreadable message."""

    # kombu's filesystem.Channel names AbstractChannel's ``message`` parameter ``payload``: so do we.
    def _put(self, queue: str, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(time.monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        folder = self.data_folder_out
        tmp = os.path.join(folder, f".tmp-{uuid.uuid4().hex}")
        try:
            with open(tmp, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(tmp, os.path.join(folder, name))
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise filesystem.ChannelError(f"Cannot add file {name!r} to directory") from exc

    def _get(self, queue: str, timeout: Any = None) -> Any:
        while True:  # ends with a message or kombu's Empty
            try:
                return super()._get(queue)
            except ValueError as exc:  # JSONDecodeError: the stock reader already removed the file
                log.error("the embedded broker dropped an unreadable message of queue %s: %s", queue, exc)

    def get_table(self, exchange: str) -> list[Any]:
        for _ in range(TABLE_READ_TRIES - 1):
            try:
                return super().get_table(exchange)
            except ValueError:  # read while a queue binding rewrote the table
                time.sleep(0.005)
        return super().get_table(exchange)


class Transport(filesystem.Transport):
    """Kombu's filesystem transport with ``Channel`` above."""

    Channel = Channel
