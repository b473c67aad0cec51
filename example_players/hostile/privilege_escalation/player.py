"""Hostile: tries to gain privileges (mount, unshare, setuid, /proc/sys, chroot, raw sockets), records what
happened, and plays on (expected: every attempt fails)."""

import ctypes
import json
import os
import socket
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000


def _libc_call(name, *args):
    libc = ctypes.CDLL(None, use_errno=True)
    result = getattr(libc, name)(*args)
    if result != 0:
        return "FAILED: " + os.strerror(ctypes.get_errno())
    return "SUCCEEDED"


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def _read(path):
    with open(path) as handle:
        return handle.read()


class Player:
    def __init__(self, train_mode=False):
        report = {"uid": os.getuid(), "euid": os.geteuid()}
        report["mount tmpfs"] = _libc_call("mount", b"none", b"/tmp", b"tmpfs", 0, None)
        report["unshare user ns"] = _libc_call("unshare", CLONE_NEWUSER)
        report["unshare mount ns"] = _libc_call("unshare", CLONE_NEWNS)
        report["chroot"] = _libc_call("chroot", b"/tmp")
        for name, action in (
            ("setuid 0", lambda: os.setuid(0)),
            ("setgid 0", lambda: os.setgid(0)),
            (
                "write /proc/sys/kernel/hostname",
                lambda: _write("/proc/sys/kernel/hostname", "pwned"),
            ),
            ("write /proc/sysrq-trigger", lambda: _write("/proc/sysrq-trigger", "h")),
            ("raw socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
            ("mknod", lambda: os.mknod("/tmp/dev", 0o600 | 0o020000, os.makedev(1, 3))),
            ("read /etc/shadow", lambda: _read("/etc/shadow")),
        ):
            try:
                action()
                report[name] = "SUCCEEDED"
            except OSError as exc:
                report[name] = "FAILED: " + str(exc.strerror)
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(("CapEff", "CapPrm", "NoNewPrivs", "Seccomp:")):
                    key, value = line.split(":", 1)
                    report[key] = value.strip()
        print("HOSTILE_REPORT " + json.dumps(report), file=sys.stderr, flush=True)

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
