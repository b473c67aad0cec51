"""Test agent: plays the first valid action and reports on stderr, at every match end, the cores
it and a thread it starts may run on (``AFFINITY [cpus] [thread cpus]``)."""

import os
import sys
import threading


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        seen = {}
        worker = threading.Thread(target=lambda: seen.update(cpus=sorted(os.sched_getaffinity(0))))
        worker.start()
        worker.join()
        print("AFFINITY", sorted(os.sched_getaffinity(0)), seen["cpus"], file=sys.stderr, flush=True)
