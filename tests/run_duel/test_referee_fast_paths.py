"""The referee's per-move shortcuts give exactly what the general paths give: the reply decoder's fast
path, a message written before the agent is thawed, the in-process sandbox's direct calls, and the
harness's message handler."""

from __future__ import annotations

import json
import socket

import pytest
from run_duel_helpers import BROKEN, RANDOM, player_source

from run_duel.channel import Channel, ChannelClosed, ChannelGarbage, ChannelTimeout
from run_duel.duel_result import validate_duel_json
from run_duel.harness import arena_harness
from run_duel.outcomes import ErrorKind
from run_duel.referee import play_duel
from run_duel.sandbox.base import LaunchSpec, Limits
from run_duel.sandbox.inprocess import DirectAgent, InProcessAgent, InProcessSandbox

LIMITS = Limits(move_timeout=5.0, init_timeout=10.0)


def general_decode(line: bytes) -> dict:
    """What the reply decoder gives without its fast path."""
    return Channel._decode(b" " + line)  # a leading space never takes the fast path


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"action","action":0}',
        b'{"type":"action","action":6}',
        b'{"type":"action","action":1234567890123}',
        b'{"type":"action","action":-1}',
        b'{"type":"action","action":3.0}',
        b'{"type":"action","action":3.5}',
        b'{"type":"action","action":true}',
        b'{"type":"action","action":null,"repr":"x"}',
        b'{"type":"action","action":"3"}',
        b'{"type":"ended"}',
        b'{"type":"ended","extra":1}',
        b'{"type": "action", "action": 3}',
    ],
)
def test_the_reply_fast_path_decodes_as_the_json_decoder_does(line: bytes) -> None:
    fast = Channel._decode(line)
    assert fast == general_decode(line) == json.loads(line)
    assert [type(v) for v in fast.values()] == [type(v) for v in json.loads(line).values()]


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"action","action":03}',
        b'{"type":"action","action":3',
        b'{"type":"action","action":3}}',
        b'{"type":"action","action":NaN}',
        b'{"type":"action","action":}',
        b'{"type":"action","action":\xff}',
    ],
)
def test_lines_the_fast_path_does_not_take_are_judged_by_the_json_decoder(line: bytes) -> None:
    with pytest.raises(ChannelGarbage):
        Channel._decode(line)


def test_a_message_is_written_before_the_wait_hook_runs_only_when_the_agent_does_not_read() -> None:
    ours, theirs = socket.socketpair()
    fd = ours.detach()
    channel = Channel(fd, fd)
    calls: list[int] = []
    try:
        channel.send({"type": "step", "state": [0]}, 1, lambda: calls.append(1))
        assert calls == []  # written at once: nothing to wait for
        assert theirs.recv(4096) == b'{"type":"step","state":[0]}\n'
        big = {"type": "step", "state": [0] * 400_000}  # more than the socket buffers hold
        with pytest.raises(ChannelTimeout, match="stopped reading"):
            channel.send(big, 0.2, lambda: calls.append(2))
        assert calls == [2]  # called once, before waiting
    finally:
        channel.close()
        theirs.close()


def test_the_inprocess_sandbox_calls_the_harness_directly_and_threaded_on_request() -> None:
    spec = LaunchSpec(str(RANDOM), limits=LIMITS)
    direct = InProcessSandbox().launch(spec)
    threaded = InProcessSandbox(threaded=True).launch(spec)
    try:
        assert isinstance(direct, DirectAgent) and isinstance(threaded, InProcessAgent)
        for proc in (direct, threaded):
            assert proc.channel.recv(5, 65536) == {"type": "ready"}
            with pytest.raises(ChannelTimeout):
                proc.channel.recv(0.05, 65536)  # nothing was asked: no reply comes
            proc.channel.send({"type": "start", "state": [[0] * 3] * 3, "valid_actions": [4]}, 5)
            assert proc.channel.recv(5, 65536) == {"type": "action", "action": 4}
            proc.channel.send({"type": "end", "state": [[0] * 3] * 3, "reward": 1.0}, 5)
            assert proc.channel.recv(5, 65536) == {"type": "ended"}
            assert proc.poll_exit() is None
            proc.channel.send({"type": "close"}, 1)
            assert proc.channel.wait_closed(5)
        assert direct.poll_exit() is not None
        with pytest.raises(ChannelClosed):
            direct.channel.recv(5, 65536)
    finally:
        direct.kill()
        threaded.kill()


@pytest.mark.parametrize("threaded", [False, True], ids=["direct", "threaded"])
def test_inprocess_duels_charge_players_as_every_sandbox_does(threaded: bool, make_agent) -> None:
    raising = make_agent(player_source("raise ValueError('boom')"))
    result = play_duel(
        "tic-tac-toe",
        InProcessSandbox(threaded=threaded),
        LaunchSpec(str(raising)),
        LaunchSpec(str(RANDOM)),
        matches=2,
        limits=LIMITS,
        pin_cpus=False,
    )
    validate_duel_json(result)
    assert [m["error_kind"] for m in result["matches"]] == [ErrorKind.CRASH, ErrorKind.CRASH]
    assert result["player_1_errors"] == 2 and result["player_1_relaunches"] == 0  # the channel stayed in sync
    assert "ValueError: boom" in result["matches"][0]["error_msg"]

    broken = play_duel(
        "tic-tac-toe",
        InProcessSandbox(threaded=threaded),
        LaunchSpec(str(RANDOM)),
        LaunchSpec(str(BROKEN / "crash_at_import")),
        matches=2,
        limits=LIMITS,
        pin_cpus=False,
    )
    assert broken["player_2_errors"] == 2 and broken["player_1_errors"] == 0
    assert "failed to start" in broken["matches"][0]["error_msg"]


def test_the_harness_message_handler_answers_one_line_at_a_time(make_agent) -> None:
    class Player:
        def start(self, state, valid_actions):
            assert state.shape == (2, 2) and valid_actions.dtype.kind == "i"
            return valid_actions[-1]

        def step(self, state, valid_actions, reward):
            raise KeyError("nope")

        def end(self, state, reward):
            self.reward = reward

    player = Player()
    handle = arena_harness.message_handler(player)
    start = (
        b'{"type":"start","state":[[0,1],[1,0]],"valid_actions":[2,3],"move_timeout":1.0,"time_bank":10.0}\n'
    )
    assert handle(start) == b'{"type":"action","action":3}\n'
    error = json.loads(handle(b'{"type":"step","state":[[0]],"valid_actions":[1],"reward":0.0}\n'))
    assert error["type"] == "error" and error["exception"] == "KeyError" and "nope" in error["message"]
    assert handle(b'{"type":"end","state":[[1]],"reward":-1.0}\n') == b'{"type":"ended"}\n'
    assert player.reward == -1.0
    unknown = json.loads(handle(b'{"type":"dance"}\n'))
    assert unknown["exception"] == "ProtocolError"
    assert handle(b'{"type":"close"}\n') is None
