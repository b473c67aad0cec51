"""Hostile: shuts down the protocol socket (or pipe) on its first move (expected: CRASH)."""

import os
import socket
import stat


def protocol_fds():
    found = []
    for fd in range(3, 256):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
            found.append((fd, stat.S_ISSOCK(mode)))
    return found


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        for fd, is_socket in protocol_fds():
            if is_socket:
                socket.socket(fileno=fd).shutdown(socket.SHUT_RDWR)
            else:
                os.close(fd)
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return self.start(state, valid_actions)

    def end(self, state, prev_reward):
        pass
