"""Hostile: tries to kill every process it can see (kill -9 -1, then each pid in /proc), and plays on.

Expected: it only sees its own container's processes; the opponent is unaffected.
"""

import json
import os
import signal
import sys


class Player:
    def __init__(self, train_mode=False):
        self.done = False

    def start(self, state, valid_actions):
        if not self.done:
            self.done = True
            report = {"own_pid": os.getpid(), "visible": {}, "killed": []}
            for name in os.listdir("/proc"):
                if name.isdigit():
                    try:
                        with open(f"/proc/{name}/cmdline", "rb") as handle:
                            report["visible"][name] = handle.read().replace(b"\0", b" ").decode()[:80]
                    except OSError as exc:
                        report["visible"][name] = exc.strerror
            try:
                os.kill(-1, signal.SIGKILL)
                report["kill -1"] = "sent"
            except OSError as exc:
                report["kill -1"] = exc.strerror
            for name in report["visible"]:
                pid = int(name)
                if pid != os.getpid():
                    try:
                        os.kill(pid, signal.SIGKILL)
                        report["killed"].append(pid)
                    except OSError as exc:
                        report.setdefault("errors", {})[name] = exc.strerror
            print("HOSTILE_REPORT " + json.dumps(report), file=sys.stderr, flush=True)
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
