"""Leaves detached processes spinning on every core it may use, then answers every move at once.

At each move it prints ``SPIN <ticks>`` on stderr: the CPU clock ticks used so far by every other process
it can see (its spinners: inside a sandbox it sees only its own processes).
"""

import os
import sys


def _others_ticks():
    total = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                pass
    return total


def _detached_spinner():
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                pass
        os._exit(0)
    os.waitpid(pid, 0)


class Player:
    def __init__(self, train_mode=False):
        for _ in range(max(2, len(os.sched_getaffinity(0)))):
            _detached_spinner()

    def start(self, state, valid_actions):
        print("SPIN", _others_ticks(), file=sys.stderr, flush=True)
        return int(valid_actions[-1])

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
