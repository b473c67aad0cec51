"""The referee's side of the NDJSON channel: deadlines, caps, and waiting for the agent to hang up."""

from __future__ import annotations

import socket
import threading

import pytest

from run_duel.channel import Channel, ChannelGarbage, ChannelOverflow, ChannelTimeout


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    fd = ours.detach()
    channel = Channel(fd, fd)
    yield channel, theirs
    channel.close()
    theirs.close()


def test_messages_go_out_as_one_compact_json_line_each(pair) -> None:
    channel, theirs = pair
    channel.send({"type": "step", "state": [[0, 1], [2, 0]], "valid_actions": [3], "reward": 0.0}, 1)
    assert theirs.recv(4096) == b'{"type":"step","state":[[0,1],[2,0]],"valid_actions":[3],"reward":0.0}\n'


def test_replies_are_checked_strictly(pair) -> None:
    channel, theirs = pair
    theirs.sendall(b'{"type":"action","action":NaN}\n[1]\n' + b"x" * 200 + b"\n")
    with pytest.raises(ChannelGarbage, match="not JSON"):
        channel.recv(1, 4096)
    with pytest.raises(ChannelGarbage, match="not a JSON object"):
        channel.recv(1, 4096)
    with pytest.raises(ChannelOverflow):
        channel.recv(1, 100)
    with pytest.raises(ChannelTimeout):
        channel.recv(0.05, 4096)


def test_wait_closed_sees_the_agent_hang_up_and_discards_what_it_still_sent(pair) -> None:
    channel, theirs = pair
    theirs.sendall(b'{"type":"late"}\n' * 10)
    threading.Timer(0.05, theirs.close).start()
    assert channel.wait_closed(20) is True


def test_wait_closed_gives_up_at_its_deadline_or_byte_cap(pair) -> None:
    channel, theirs = pair
    assert channel.wait_closed(0.05) is False  # the agent keeps the channel open
    theirs.sendall(b"y" * 5000)
    assert channel.wait_closed(20, max_bytes=1000) is False  # an agent that keeps talking is not waited for
