"""Hostile: drips a reply one byte at a time, never sending the newline (expected: TIMEOUT).

It finds the protocol descriptor by trying descriptors >= 3 (a socket in Docker, a write-only pipe locally)
and writes to it directly, behind the harness's back.
"""

import fcntl
import os
import stat
import time


def protocol_fd():
    for fd in range(3, 256):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISSOCK(mode):
            return fd
        if stat.S_ISFIFO(mode) and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY:
            return fd
    raise RuntimeError("no protocol descriptor found")


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        fd = protocol_fd()
        payload = b'{"type":"action","action":' + b"1" * 10_000_000
        for byte in payload:
            os.write(fd, bytes([byte]))
            time.sleep(0.05)

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
