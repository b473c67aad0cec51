"""Broken on purpose: writes garbage bytes wherever the protocol might travel, then plays legally.

The harness moves the protocol away from fd 1 to a private descriptor (or a Unix socket), so this
player writes ``b"not json\\n"`` to fd 1 *and* to every open descriptor >= 3: whichever one carries
the protocol receives a line that is not JSON before the (legal) action. Expected: BAD_OUTPUT.
"""

import contextlib
import os

GARBAGE = b"not json\n"


def open_descriptors() -> list[int]:
    """Open file descriptors >= 3 of this process (``/proc`` when available, else a probe)."""
    try:
        candidates = sorted(int(name) for name in os.listdir("/proc/self/fd"))
    except OSError:
        candidates = list(range(3, 1024))
    found = []
    for fd in candidates:
        if fd < 3:
            continue
        try:
            os.fstat(fd)
        except OSError:
            continue
        found.append(fd)
    return found


def spray(data: bytes) -> None:
    """Write ``data`` to fd 1 and every open fd >= 3, ignoring the ones that refuse (read ends...)."""
    for fd in [1, *open_descriptors()]:
        with contextlib.suppress(OSError):
            os.write(fd, data)


class Player:
    """Sprays non-JSON bytes on every move, then returns a legal action."""

    def __init__(self, train_mode: bool = False) -> None:
        pass

    def start(self, state, valid_actions) -> int:
        """Garbage, then a legal move."""
        spray(GARBAGE)
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward) -> int:
        """Garbage, then a legal move."""
        spray(GARBAGE)
        return int(valid_actions[0])

    def end(self, state, prev_reward) -> None:
        """Match over."""
