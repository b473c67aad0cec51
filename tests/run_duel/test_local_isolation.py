"""The local sandbox never weakens silently: without bubblewrap it refuses to start unless
SANDBOX_ALLOW_UNISOLATED=1 (and then warns every time); inside bubblewrap a seccomp filter refuses the
system calls Docker's default profile refuses."""

from __future__ import annotations

import json
import logging
import platform

import pytest
from run_duel_helpers import HAS_BWRAP, RANDOM, player_source

from run_duel.sandbox import local
from run_duel.sandbox.base import LaunchSpec, SandboxError
from run_duel.sandbox.local import LocalSandbox

#: x86_64 system calls Docker's default profile refuses, with arguments an unfiltered kernel answers
#: otherwise (keyctl: the session keyring's id; bpf and add_key: bad arguments, EINVAL / EFAULT).
PROBE = player_source("""
    import ctypes, ctypes.util, errno, json
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    calls = {"keyctl": (250, 0, -3, 0), "bpf": (321, 9999, 0, 0), "add_key": (248, 0, 0, 0)}
    out = {}
    for name, (nr, *args) in calls.items():
        result = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
        out[name] = "ok" if result >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
    with open("/proc/self/status") as f:
        out["Seccomp"] = next(l.split()[1] for l in f if l.startswith("Seccomp:"))
    print("SYSCALLS " + json.dumps(out), file=sys.stderr, flush=True)
    return int(valid_actions[0])
""")


def _probe(sandbox: LocalSandbox, make_agent) -> dict:
    proc = sandbox.launch(LaunchSpec(str(make_agent(PROBE))))
    try:
        assert proc.channel.recv(60, 65536) == {"type": "ready"}, proc.stderr_log()
        proc.channel.send({"type": "start", "state": [[0] * 3] * 3, "valid_actions": [0, 1]}, 10)
        assert proc.channel.recv(30, 65536)["type"] == "action", proc.stderr_log()
    finally:
        proc.kill()
    line = next(x for x in proc.stderr_log().splitlines() if x.startswith("SYSCALLS "))
    return json.loads(line.split(" ", 1)[1])


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap is not installed")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe uses x86_64 system call numbers")
def test_bubblewrap_refuses_the_system_calls_docker_refuses(make_agent):
    found = _probe(LocalSandbox(use_bwrap=True), make_agent)
    assert found["Seccomp"] == "2"  # a filter is active
    assert found["keyctl"] == found["add_key"] == "EPERM", found
    assert found["bpf"] == "EPERM", found


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe uses x86_64 system call numbers")
def test_the_unfiltered_plain_sandbox_lets_keyctl_through(make_agent):
    """The probe can tell: the same calls outside the filter do not all fail with EPERM."""
    found = _probe(LocalSandbox(use_bwrap=False), make_agent)
    assert found["Seccomp"] == "0"
    assert found["keyctl"] != "EPERM", found


def test_without_bubblewrap_the_sandbox_refuses_unless_unisolated_is_allowed(monkeypatch, caplog):
    monkeypatch.setattr(local, "bwrap_path", lambda: None)  # this machine without bubblewrap installed
    monkeypatch.delenv(local.ALLOW_UNISOLATED_ENV, raising=False)
    with pytest.raises(SandboxError, match="SANDBOX_ALLOW_UNISOLATED=1"):
        LocalSandbox()
    monkeypatch.setenv(local.ALLOW_UNISOLATED_ENV, "1")
    for _ in range(2):  # a warning on every start, not once per process
        with caplog.at_level(logging.WARNING, logger="run_duel.sandbox.local"):
            caplog.clear()
            sandbox = LocalSandbox()
        assert sandbox.bwrap is None
        assert "UNISOLATED AGENTS" in caplog.text
    proc = sandbox.launch(LaunchSpec(str(RANDOM)))
    try:
        assert proc.channel.recv(60, 65536) == {"type": "ready"}
    finally:
        proc.kill()
