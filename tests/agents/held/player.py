"""Test agent: a legal player that stays in play until released, so that a test can act on a duel in
progress (restart the Docker engine under it) whatever the machine's speed or load.

It plays the first valid action. Until released, every move takes ``PACE_S`` (a quarter of Connect
Four's one-second move limit), so a duel of it lasts at least its number of moves times ``PACE_S``: with
both seats held, a 12-match Connect Four duel (19 moves a match) takes a minute or more, and load only
makes that longer. It is released when a file named ``release`` appears next to its socket: the Docker
sandbox bind-mounts each launch's socket folder at ``/run/arena``, and the host may add a file there
(``tests/docker/dockertest_support.release_held_agents``); from then on it answers at once.

It tells stderr (its agent log, which the host reads) ``IN PLAY`` on its first move and ``RELEASED``
when it sees the release, so a test waits on these instead of sleeping.
"""

import os
import sys
import time

PACE_S = 0.25
RELEASE_FILE = "/run/arena/release"


class Player:
    def __init__(self, train_mode=False):
        self.moves = 0
        self.released = False

    def start(self, state, valid_actions):
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward):
        self.moves += 1
        if self.moves == 1:
            print("IN PLAY", file=sys.stderr, flush=True)
        if not self.released and os.path.exists(RELEASE_FILE):
            self.released = True
            print("RELEASED", file=sys.stderr, flush=True)
        if not self.released:
            time.sleep(PACE_S)
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
