"""Hostile: forks two processes that spin forever (while starting), then plays on, keeping the CPU busy
during its opponent's turns as well as its own.

Expected: plays on, and so does its opponent: the hog is confined to its duel's core (the referee pins
the duel once both agents are ready) and to its CPU quota, where the kernel still gives the opponent its
share. At every match end it reports the cores it and its spinners may use.
"""

import json
import os
import sys


def _spin():
    while True:
        pass


class Player:
    def __init__(self, train_mode=False):
        self.spinners = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                _spin()
            self.spinners.append(pid)

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        report = {
            "spinners": len(self.spinners),
            "cpus": sorted(os.sched_getaffinity(0)),
            "spinner_cpus": sorted({cpu for pid in self.spinners for cpu in os.sched_getaffinity(pid)}),
        }
        print("HOSTILE_REPORT " + json.dumps(report), file=sys.stderr, flush=True)
