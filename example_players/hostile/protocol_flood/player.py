"""Hostile: floods the protocol descriptor with 16 MB without a newline (expected: OUTPUT_LIMIT).

The bytes go straight to the protocol descriptor (found by trying descriptors >= 3), bypassing the harness.
"""

import fcntl
import os
import stat

PAYLOAD = b'{"type":"action","action":"' + b"A" * (16 * 1024 * 1024)


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
        view = memoryview(PAYLOAD)
        while view:
            view = view[os.write(fd, view) :]
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
