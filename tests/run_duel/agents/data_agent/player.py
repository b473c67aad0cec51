"""A test agent that uses its persistent data folder ($ARENA_DATA_DIR) as ``$ARENA_DATA_MODE`` says.

- ``count`` (default): reads ``duels.txt`` when it starts, prints ``started with N``, and writes N + 1
  (plus a file ``secret.txt`` holding ``$ARENA_DATA_SECRET``, in a sub-folder) at the end of each match.
- ``fill``: at its first move writes 64 KB chunks into ``fill.bin`` until the folder is full and prints
  ``filled N bytes: ERROR``.
- ``hostile``: leaves what a data folder must never carry out, a link to the referee's files and a named
  pipe, beside a regular file ``kept.txt``.
- ``exit``: exits at its first move (every time it is relaunched): it is never running at the end.
- ``snoop``: prints ``FOUND <path>`` for every file it can read anywhere on its file system (the
  mount namespaces of other processes included) that holds ``$ARENA_DATA_SECRET``, else ``found nothing``.

It always plays the first legal action.
"""

import os
import stat

MODE = os.environ.get("ARENA_DATA_MODE", "count")
SECRET = os.environ.get("ARENA_DATA_SECRET", "")


def _writable_mounts() -> list[str]:
    mounts = []
    with open("/proc/self/mounts") as handle:
        for line in handle:
            _, point, kind, options = line.split()[:4]
            if "rw" in options.split(",") and kind not in ("proc", "sysfs", "cgroup", "cgroup2", "devpts"):
                mounts.append(point)
    return mounts


def _snoop(secret: bytes) -> tuple[list[str], int]:
    """Files holding ``secret`` on every writable file system this agent sees (another agent's folder
    could only be on one), through its own root and every visible process's; and how many it read."""
    found, searched = [], 0
    roots = ["/"] + [f"/proc/{p}/root/" for p in os.listdir("/proc") if p.isdigit()]
    for root in roots:
        for mount in _writable_mounts():
            for folder, dirs, files in os.walk(os.path.join(root, mount.lstrip("/"))):
                dirs[:] = [d for d in dirs if not (folder == root.rstrip("/") + "/" and d in ("proc", "sys"))]
                for name in files:
                    path = os.path.join(folder, name)
                    try:
                        info = os.lstat(path)
                        if stat.S_ISREG(info.st_mode) and info.st_size < 1_000_000:
                            with open(path, "rb") as handle:
                                searched += 1
                                if secret in handle.read():
                                    found.append(path)
                    except OSError:
                        pass
    return found, searched


class Player:
    def __init__(self, train_mode):
        self.dir = os.environ["ARENA_DATA_DIR"]
        self.moves = 0
        path = os.path.join(self.dir, "duels.txt")
        self.duels = 0
        if os.path.exists(path):
            with open(path) as handle:
                self.duels = int(handle.read())
        print(f"started with {self.duels}", flush=True)
        if MODE == "snoop":
            hits, searched = _snoop(SECRET.encode())
            print("\n".join(f"FOUND {hit}" for hit in hits) or f"nothing in {searched} files", flush=True)

    def start(self, state, valid_actions):
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward):
        self.moves += 1
        if MODE == "exit":
            os._exit(3)
        if MODE == "fill" and self.moves == 1:
            written = 0
            try:
                with open(os.path.join(self.dir, "fill.bin"), "wb") as handle:
                    while written < 1 << 30:
                        handle.write(b"x" * 65536)
                        handle.flush()
                        written += 65536
            except OSError as exc:
                print(f"filled {written} bytes: {exc.strerror}", flush=True)
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        if MODE == "count":
            os.makedirs(os.path.join(self.dir, "notes"), exist_ok=True)
            with open(os.path.join(self.dir, "notes", "secret.txt"), "w") as handle:
                handle.write(SECRET)
            with open(os.path.join(self.dir, "duels.txt"), "w") as handle:
                handle.write(str(self.duels + 1))
        if MODE == "hostile":
            for name in ("passwd-link", "pipe", "kept.txt"):
                path = os.path.join(self.dir, name)
                if os.path.lexists(path):
                    os.unlink(path)
            os.symlink("/etc/passwd", os.path.join(self.dir, "passwd-link"))
            os.mkfifo(os.path.join(self.dir, "pipe"))
            with open(os.path.join(self.dir, "kept.txt"), "w") as handle:
                handle.write("kept")
