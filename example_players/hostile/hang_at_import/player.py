"""Hostile: never finishes importing (expected: TIMEOUT while starting)."""

import time

while True:
    time.sleep(3600)


class Player:  # never reached
    def __init__(self, train_mode=False):
        pass
