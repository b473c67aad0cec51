"""Broken on purpose: floods every possible output channel with ~200 MB without a newline.

Writes 1 MiB chunks of ``x`` (no newline) in a loop to fd 1 and to every open descriptor >= 3, so the
descriptor that carries the protocol receives one endless line. Expected: OUTPUT_LIMIT (or TIMEOUT if
the referee stops reading and the writes block), never memory exhaustion in the referee.
"""

import os

CHUNK = b"x" * (1 << 20)
CHUNKS = 200  # 200 MiB per descriptor


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


def flood() -> None:
    """Write ``CHUNKS`` chunks to each writable descriptor, interleaved, dropping any that refuse."""
    targets = [1, *open_descriptors()]
    for _ in range(CHUNKS):
        for fd in list(targets):
            try:
                os.write(fd, CHUNK)
            except OSError:
                targets.remove(fd)
        if not targets:
            return


class Player:
    """Floods on the first move of a match, then (if still alive) plays legally."""

    def __init__(self, train_mode: bool = False) -> None:
        pass

    def start(self, state, valid_actions) -> int:
        """Flood, then a legal move."""
        flood()
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward) -> int:
        """Flood, then a legal move."""
        flood()
        return int(valid_actions[0])

    def end(self, state, prev_reward) -> None:
        """Match over."""
