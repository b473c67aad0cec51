"""The stderr tail an error message quotes holds what the agent wrote before it failed, whether or not
the reader thread has run since (``run_duel/sandbox/tail_reader.py``)."""

from __future__ import annotations

import os

from run_duel.sandbox.tail_reader import TailReader


def test_text_holds_what_was_written_before_the_call_even_if_the_thread_never_ran() -> None:
    # The thread is not started: on a loaded machine it may not have been scheduled between the agent's
    # last stderr line and the reply the referee quotes that line in.
    read_end, write_end = os.pipe()
    reader = TailReader(read_end, limit=1024)
    try:
        os.write(write_end, b"first line\nlast words before the exception\n")
        assert reader.text() == "first line\nlast words before the exception\n"
        os.write(write_end, b"more\n")
        assert reader.text().endswith("exception\nmore\n")
    finally:
        reader.start()
        os.close(write_end)
        reader.drain(5)
        reader.stop()


def test_the_thread_and_text_read_in_the_pipes_order_and_keep_the_tail() -> None:
    read_end, write_end = os.pipe()
    reader = TailReader(read_end, limit=100)
    reader.start()
    try:
        lines = [f"line {i:04d}\n".encode() for i in range(2000)]
        for i, line in enumerate(lines):
            os.write(write_end, line)
            if i % 97 == 0:
                reader.text()  # reads beside the thread
        text = reader.text()
        assert text.endswith(b"".join(lines)[-100:].decode())
        assert text.startswith(f"[... {len(b''.join(lines)) - 100} earlier bytes dropped ...]\n")
    finally:
        os.close(write_end)
        reader.drain(5)
        reader.stop()


def test_text_after_stop_reads_nothing_more() -> None:
    read_end, write_end = os.pipe()
    reader = TailReader(read_end, limit=1024)
    reader.start()
    os.write(write_end, b"kept\n")
    os.close(write_end)
    reader.drain(5)
    reader.stop()
    spare_read, spare_write = os.pipe()  # may take the closed descriptor's number: never read by text
    try:
        os.write(spare_write, b"not the agent's\n")
        assert reader.text() == "kept\n"
    finally:
        os.close(spare_read)
        os.close(spare_write)
