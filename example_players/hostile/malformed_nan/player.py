"""Hostile: writes NaN as its action (expected: BAD_OUTPUT).

The bytes go straight to the protocol descriptor (found by trying descriptors >= 3), bypassing the harness.
"""

import fcntl
import os
import stat

PAYLOAD = b'{"type":"action","action":NaN}\n'


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
        os.write(protocol_fd(), PAYLOAD)
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
