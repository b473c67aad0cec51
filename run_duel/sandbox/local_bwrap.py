"""Bubblewrap: whether it is installed (and whether running without it is allowed), and the data folder
of a bubblewrap sandbox (``BwrapDataFolder``)."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import shutil
import subprocess
import time

from run_duel.agent_data import DATA_DIR_IN_SANDBOX, fill_folder
from run_duel.sandbox.base import SandboxError
from run_duel.sandbox.local_user import file_identity
from run_duel.settings import run_duel_settings

#: How long bubblewrap may take to set up the sandbox before the data folder is filled.
DATA_SETUP_TIMEOUT_S = 10.0

#: The setting that allows running agents without bubblewrap (as plain subprocesses) when ``bwrap`` is
#: missing: without it the local sandbox refuses to start rather than fall back silently.
ALLOW_UNISOLATED_ENV = "SANDBOX_ALLOW_UNISOLATED"


def unisolated_allowed() -> bool:
    """Whether ``$SANDBOX_ALLOW_UNISOLATED`` allows plain subprocesses (default: no; a value that is not a
    boolean stops the process, ``run_duel.settings``)."""
    return run_duel_settings().allow_unisolated


def bwrap_path() -> str | None:
    """Path of the ``bwrap`` executable, or ``None`` when bubblewrap is not installed."""
    return shutil.which("bwrap")


@functools.cache
def bwrap_supports(bwrap: str, option: str) -> bool:
    """Whether this bubblewrap build knows ``option`` (``--disable-userns`` needs 0.8)."""
    try:
        done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return option in done.stdout + done.stderr


class BwrapDataFolder:
    """The data tmpfs of a bubblewrap sandbox, reached through the mount namespace of the sandbox's first
    process (named on bubblewrap's ``--info-fd``). Filling it needs the harness held (``--block-fd``);
    reading it back does not, so an empty folder costs no wait at launch (the info is read when needed)."""

    def __init__(
        self, proc: subprocess.Popen[bytes], info_fd: int, owner: tuple[int, int] | None = None
    ) -> None:
        self.proc = proc
        self.owner = owner  # the host (uid, gid) of the sandbox's files: AGENT_USER's when we are root
        self.info_fd: int | None = info_fd
        self.path: str | None = None

    def root(self) -> str:
        """The folder's path as we reach it, once the sandbox's first process pivoted into its root."""
        if self.path is not None:
            return self.path
        if self.info_fd is None:
            raise SandboxError("the sandbox's data folder is gone")
        try:
            deadline = time.monotonic() + DATA_SETUP_TIMEOUT_S
            info = b""
            while b"}" not in info:
                ready, _, _ = select.select([self.info_fd], [], [], max(0.0, deadline - time.monotonic()))
                chunk = os.read(self.info_fd, 4096) if ready else b""
                if not chunk:
                    raise SandboxError(
                        f"bubblewrap did not say where the sandbox is (exit {self.proc.poll()})"
                    )
                info += chunk
        finally:
            self.close()
        root = f"/proc/{int(json.loads(info)['child-pid'])}/root"
        host_root = os.stat("/").st_dev
        while True:  # the first process pivots into the new root when every mount is in place
            with contextlib.suppress(OSError):
                if os.stat(root).st_dev != host_root and os.path.isdir(root + DATA_DIR_IN_SANDBOX):
                    break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SandboxError("the sandbox's data folder did not appear")
            time.sleep(0.002)
        self.path = root + DATA_DIR_IN_SANDBOX
        return self.path

    def fill(self, block_fd: int, archive: bytes, cap_bytes: int) -> None:
        """Write the archive into the folder, then release the harness."""
        try:
            root = self.root()
            if self.owner is not None:  # bubblewrap made it as (namespaced) root: the agent's, mode 0700
                fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    os.fchown(fd, *self.owner)
                finally:
                    os.close(fd)
            with file_identity(self.owner):
                fill_folder(archive, root, cap_bytes)
            os.write(block_fd, b"1")
        finally:
            os.close(block_fd)

    def close(self) -> None:
        if self.info_fd is not None:
            os.close(self.info_fd)
            self.info_fd = None
