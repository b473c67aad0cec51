"""The embedded broker (issue 28 item 7): Kombu's filesystem transport ended the worker when a consumer
read a message file its writer had created but not yet written (``JSONDecodeError`` on an empty payload).
``core.broker_fs`` writes messages atomically and survives an unreadable one."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kombu import Connection
from kombu.transport import filesystem

import core.celery  # noqa: F401 - registers core.broker_fs under the filesystem scheme
from core.broker_fs import Transport

QUEUE = "celery"


def _connection(tmp_path: Path) -> Connection:
    """A connection on the broker folders under ``tmp_path`` (made by the first one)."""
    folders = {name: tmp_path / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir(exist_ok=True)
    return Connection(
        "filesystem://localhost//",
        transport_options={
            "data_folder_in": str(folders["queue"]),
            "data_folder_out": str(folders["queue"]),
            "processed_folder": str(folders["processed"]),
            "control_folder": str(folders["control"]),
            "store_processed": False,
        },
    )


def _half_written_message(folder: Path) -> None:
    """What the stock writer leaves for an instant: the message file created, nothing written yet."""
    (folder / f"1_00000000-0000-0000-0000-000000000000.{QUEUE}.msg").write_bytes(b"")


def test_the_filesystem_scheme_uses_the_atomic_transport(tmp_path):
    with _connection(tmp_path) as conn:
        assert isinstance(conn.transport, Transport)


def test_the_stock_reader_dies_on_a_half_written_message_and_ours_goes_on(tmp_path):
    with _connection(tmp_path) as conn:
        channel = conn.default_channel
        _half_written_message(tmp_path / "queue")
        with pytest.raises(ValueError):  # the crash: json.loads("") in Kombu's own reader
            filesystem.Channel._get(channel, QUEUE)

        _half_written_message(tmp_path / "queue")
        channel._put(QUEUE, {"body": "after"})
        assert channel._get(QUEUE) == {"body": "after"}  # the bad file dropped, the next message read
        with pytest.raises(filesystem.Empty):
            channel._get(QUEUE)


def test_a_reader_racing_a_writer_reads_every_message_once(tmp_path):
    with _connection(tmp_path) as producer, _connection(tmp_path) as consumer:
        count = 1500
        writer = threading.Thread(
            target=lambda: [producer.default_channel._put(QUEUE, {"n": i}) for i in range(count)]
        )
        writer.start()
        seen: list[int] = []
        channel = consumer.default_channel
        while writer.is_alive() or len(seen) < count:
            try:
                seen.append(channel._get(QUEUE)["n"])
            except filesystem.Empty:
                if not writer.is_alive() and len(seen) < count and not list((tmp_path / "queue").iterdir()):
                    break
        writer.join()
        assert sorted(seen) == list(range(count))
        assert list((tmp_path / "queue").iterdir()) == []  # no temporary file left behind
