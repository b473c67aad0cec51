"""The agent harness, run as a real process (no sandbox): protocol hygiene and conversions."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from run_duel_helpers import player_source

from run_duel.harness import HARNESS_DIR, PYTHON_HARNESS_FILES
from run_duel.sandbox.local import HARNESS_PATH

START = {"type": "start", "state": [[0, 1], [-1, 0]], "valid_actions": [2, 3]}


def step(reward: float = 0.0) -> dict:
    return {"type": "step", "state": [[0, 1], [-1, 0]], "valid_actions": [2, 3], "reward": reward}


def converse(agent: Path, messages: list[dict], *extra_args: str) -> tuple[list[dict], str, int]:
    """Run the harness on stdin/stdout; return its protocol replies (parsed), its stderr, its exit code."""
    payload = "".join(json.dumps(m) + "\n" for m in messages)
    done = subprocess.run(
        [sys.executable, str(HARNESS_PATH), "--agent-dir", str(agent), *extra_args],
        input=payload.encode(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    return replies, done.stderr.decode(), done.returncode


def test_user_prints_go_to_stderr_never_to_the_protocol(make_agent):
    agent = make_agent(
        player_source("""
            print("hello from act")
            sys.stdout.write("raw write\\n")
            os.write(1, b"fd 1 write\\n")
            return int(valid_actions[0])
        """)
    )
    replies, stderr, code = converse(agent, [START, step(), {"type": "close"}])
    assert replies == [{"type": "ready"}, {"type": "action", "action": 2}, {"type": "action", "action": 2}]
    assert "hello from act" in stderr and "raw write" in stderr and "fd 1 write" in stderr
    assert code == 0


def test_numpy_integers_and_size_one_arrays_become_ints(make_agent):
    agent = make_agent(
        player_source("""
            if self.moves == 1:
                return valid_actions[1]          # numpy.int64
            return np.array([[3]], dtype=np.int32)  # size-1 array
        """)
    )
    replies, _, _ = converse(agent, [START, step()])
    assert replies[1:] == [{"type": "action", "action": 3}, {"type": "action", "action": 3}]


def test_values_that_are_not_json_are_sent_as_null_with_their_repr(make_agent):
    agent = make_agent(
        player_source("""
            return object() if self.moves == 1 else float("nan")
        """)
    )
    replies, _, _ = converse(agent, [START, step()])
    assert replies[1]["action"] is None and replies[1]["repr"].startswith("<object object")
    assert replies[2] == {"type": "action", "action": None, "repr": "nan"}


def test_an_exception_in_user_code_is_reported_and_the_harness_keeps_serving(make_agent):
    agent = make_agent(
        player_source("""
            if self.moves == 1:
                raise ValueError("boom")
            return 3
        """)
    )
    replies, _, code = converse(agent, [START, step(), {"type": "end", "state": [[0]], "reward": 1.0}])
    assert replies[1]["type"] == "error" and replies[1]["exception"] == "ValueError"
    assert "boom" in replies[1]["message"] and 'player.py", line' in replies[1]["message"]
    assert "arena_harness" not in replies[1]["message"]  # only the user's frames
    assert replies[2:] == [{"type": "action", "action": 3}, {"type": "ended"}]
    assert code == 0


def test_an_import_error_is_reported_and_the_harness_exits_non_zero(make_agent):
    agent = make_agent("import no_such_module_anywhere\n")
    replies, _, code = converse(agent, [START])
    assert replies[0]["type"] == "error" and replies[0]["exception"] == "ModuleNotFoundError"
    assert code == 1


def test_arena_seed_makes_the_global_rngs_reproducible(make_agent):
    agent = make_agent(player_source("return int(np.random.randint(1000000))"))
    env = {**os.environ, "ARENA_SEED": "7"}
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(HARNESS_PATH), "--agent-dir", str(agent)],
            input=(json.dumps(START) + "\n").encode(),
            capture_output=True,
            env=env,
            timeout=30,
            check=False,
        )
        runs.append(done.stdout)
    assert runs[0] == runs[1]


def test_connect_mode_talks_over_a_unix_socket_created_after_the_harness_starts(make_agent, tmp_path):
    agent = make_agent(player_source("return int(valid_actions[-1])"))
    path = str(tmp_path / "agent.sock")
    proc = subprocess.Popen(
        [sys.executable, str(HARNESS_PATH), "--agent-dir", str(agent), "--connect", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(0.2)  # the socket does not exist yet: the harness must retry
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        server.settimeout(20)
        conn, _ = server.accept()
        reader = conn.makefile("rb")
        assert json.loads(reader.readline()) == {"type": "ready"}
        conn.sendall((json.dumps(START) + "\n").encode())
        assert json.loads(reader.readline()) == {"type": "action", "action": 3}
        conn.sendall(b'{"type":"close"}\n')
        assert proc.wait(timeout=20) == 0
        assert proc.stdout.read() == b""  # nothing on stdout in socket mode either
    finally:
        proc.kill()
        proc.wait()


def test_a_memory_error_is_reported_as_such(make_agent):
    agent = make_agent(player_source("raise MemoryError()"))
    replies, _, _ = converse(agent, [START])
    assert replies[1]["type"] == "error" and replies[1]["exception"] == "MemoryError"


def test_the_harness_does_not_import_run_duel():
    for name in PYTHON_HARNESS_FILES:
        source = (HARNESS_DIR / name).read_text()
        assert "run_duel" not in "".join(
            line for line in source.splitlines() if line.lstrip().startswith(("import", "from"))
        ), name
    done = subprocess.run(
        [sys.executable, "-I", str(HARNESS_PATH), "--help"], capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 0


def test_the_shipped_files_alone_run_isolated_and_leave_the_agent_a_clean_path(make_agent, tmp_path):
    """As agent images and sandboxes ship it: the harness's files in a folder of their own, run with
    ``-I`` (its folder not on ``sys.path``): it loads its modules from there, and the agent's code does not
    find that folder on its path."""
    shipped = tmp_path / "arena"
    shipped.mkdir()
    for name in PYTHON_HARNESS_FILES:
        (shipped / name).write_bytes((HARNESS_DIR / name).read_bytes())
    agent = make_agent(
        player_source(f"return int(valid_actions[0]) if {str(shipped)!r} not in sys.path else -1")
    )
    payload = json.dumps(START) + "\n" + json.dumps({"type": "close"}) + "\n"
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-u", str(shipped / "arena_harness.py"), "--agent-dir", str(agent)],
        input=payload.encode(),
        capture_output=True,
        timeout=30,
        check=False,
        cwd=tmp_path,
    )
    replies = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert replies == [{"type": "ready"}, {"type": "action", "action": 2}], done.stderr.decode()
    assert done.returncode == 0


def test_close_ends_the_conversation_before_the_interpreter_shuts_down(make_agent, tmp_path):
    """The referee sees end-of-file as soon as it says ``close``, whatever the user's exit hooks do."""
    agent = make_agent(
        "import atexit, time\natexit.register(time.sleep, 60)\n"
        + player_source("return int(valid_actions[0])")
    )
    path = str(tmp_path / "agent.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    server.settimeout(20)
    proc = subprocess.Popen(
        [sys.executable, str(HARNESS_PATH), "--agent-dir", str(agent), "--connect", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        conn, _ = server.accept()
        conn.settimeout(20)
        reader = conn.makefile("rb")
        assert json.loads(reader.readline()) == {"type": "ready"}
        conn.sendall(b'{"type":"close"}\n')
        assert reader.readline() == b""  # end-of-file ...
        assert proc.poll() is None  # ... while the process is still in its 60 s exit hook
    finally:
        proc.kill()
        proc.wait()
        server.close()
