"""The stderr tail an error message quotes holds what the agent wrote before it failed, whether or not
the reader thread has run since (``run_duel/sandbox/tail_reader.py``)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from run_duel.sandbox.tail_reader import TailReader


@contextmanager
def agent_pipe(limit: int, *, started: bool = True) -> Iterator[tuple[TailReader, int]]:
    """A reader of a pipe's tail and the pipe's write end (the agent's stderr); the thread is started
    now, or else only at the end, before the writer closes and the reader stops."""
    read_end, write_end = os.pipe()
    reader = TailReader(read_end, limit=limit)
    if started:
        reader.start()
    try:
        yield reader, write_end
    finally:
        if not started:
            reader.start()
        os.close(write_end)
        reader.drain(5)
        reader.stop()


def test_text_holds_what_was_written_before_the_call_even_if_the_thread_never_ran() -> None:
    # The thread is not started: on a loaded machine it may not have been scheduled between the agent's
    # last stderr line and the reply the referee quotes that line in.
    with agent_pipe(1024, started=False) as (reader, agent):
        os.write(agent, b"first line\nlast words before the exception\n")
        assert reader.text() == "first line\nlast words before the exception\n"
        os.write(agent, b"more\n")
        assert reader.text().endswith("exception\nmore\n")


def test_the_thread_and_text_read_in_the_pipes_order_and_keep_the_tail() -> None:
    lines = [f"line {i:04d}\n".encode() for i in range(2000)]
    with agent_pipe(100) as (reader, agent):
        for i, line in enumerate(lines):
            os.write(agent, line)
            if i % 97 == 0:
                reader.text()  # reads beside the thread
        text = reader.text()
    written = b"".join(lines)
    assert text == f"[... {len(written) - 100} earlier bytes dropped ...]\n" + written[-100:].decode()


def test_text_after_stop_reads_nothing_more() -> None:
    with agent_pipe(1024) as (reader, agent):
        os.write(agent, b"kept\n")
    spare_read, spare_write = os.pipe()  # may take the closed descriptor's number: never read by text
    try:
        os.write(spare_write, b"not the agent's\n")
        assert reader.text() == "kept\n"
    finally:
        os.close(spare_read)
        os.close(spare_write)
