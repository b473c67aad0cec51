"""Test agent for warm sandboxes: reports what an earlier duel in its container left, then leaves things.

On its first move it writes ``WARM_PROBE {json}`` on stderr: the entries of /tmp and /dev/shm, the other
processes it can see (pid -> command line), System V shared memory segments, its cgroups (they name the
container) and the numpy random draw it got. Then it plants what a later duel must not see: a file in
/tmp and /dev/shm, a daemon (double fork + setsid) that keeps writing to /tmp, and, when the
environment variable ``PROBE_SYSV`` is set, a System V shared memory segment (which outlives processes).
"""

import ctypes
import json
import os
import sys
import time

import numpy


def _report():
    visible = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as handle:
                    visible[name] = handle.read().replace(b"\0", b" ").decode()[:120]
            except OSError as exc:
                visible[name] = exc.strerror
    with open("/proc/sysvipc/shm") as handle:
        sysv = handle.read().splitlines()[1:]
    with open("/proc/self/cgroup") as handle:
        cgroups = handle.read().splitlines()
    return {
        "tmp": sorted(os.listdir("/tmp")),
        "shm": sorted(os.listdir("/dev/shm")),
        "visible": visible,
        "sysv": sysv,
        "cgroups": cgroups,
        "draw": int(numpy.random.randint(1 << 30)),
        "pid": os.getpid(),
    }


def _plant():
    with open(f"/tmp/planted-{os.getpid()}", "w") as handle:
        handle.write("left by an earlier duel")
    with open("/dev/shm/planted", "w") as handle:
        handle.write("left by an earlier duel")
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:  # a daemon that outlives its parent and keeps writing
                with open("/tmp/daemon-alive", "w") as handle:
                    handle.write(str(time.time()))
                time.sleep(0.05)
        os._exit(0)
    os.wait()
    if os.environ.get("PROBE_SYSV"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmget(0, 4096, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT


class Player:
    def __init__(self, train_mode=False):
        self.reported = False

    def start(self, state, valid_actions):
        if not self.reported:
            self.reported = True
            print("WARM_PROBE " + json.dumps(_report()), file=sys.stderr, flush=True)
            _plant()
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
