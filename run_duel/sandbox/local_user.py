"""The host user a root referee runs its local agents as, and the user namespace that maps it.

Bubblewrap started by root maps the sandbox's uid to host uid 0, so an agent could read every root-only
file of the folders bound into its sandbox. A root referee instead makes a user namespace itself
(``agent_userns``) where the sandbox's uid 65534 is ``AGENT_USER``, gives it to bubblewrap, and the agent
drops to it (``setpriv``) before the harness starts. A referee that is not root needs none of this.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from run_duel.sandbox.base import SandboxError

#: The host user every agent runs as when the referee is root. Bubblewrap started by root maps the
#: sandbox's uid to host uid 0, so an agent could read every root-only file of the folders bound into its
#: sandbox; instead, a root referee gives bubblewrap a user namespace it made itself (``agent_userns``),
#: where the sandbox's uid 65534 is this user, and the agent drops to it (``setpriv``) before the harness
#: starts. ``scripts/ensure_agent_user.sh`` creates it (``./prepare_dev.sh`` and ``run_tests.sh`` run it);
#: without it a root referee refuses to start bubblewrap. A referee that is not root needs none: bubblewrap
#: maps the sandbox's uid to the referee's own, already unprivileged.
AGENT_USER = "rl-arena-agent"
#: The agent's uid and gid inside the sandbox (bubblewrap's and Docker's ``nobody``).
SANDBOX_UID = 65534
_CLONE_NEWUSER = 0x10000000


def agent_host_user() -> tuple[int, int] | None:
    """``(uid, gid)`` agents must run as: ``AGENT_USER``'s when we are root, else ``None`` (our own).

    Raises ``SandboxError`` when we are root and that user is missing or privileged."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(AGENT_USER)
    except KeyError:
        raise SandboxError(
            f"the worker runs as root, and bubblewrap started by root would run agents as host root (able to "
            f"read every root-only file of the folders bound into the sandbox): create the unprivileged user "
            f"{AGENT_USER!r} that agents run as instead (scripts/ensure_agent_user.sh; ./prepare_dev.sh runs "
            f"it), or run the worker as an unprivileged user"
        ) from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise SandboxError(
            f"the user {AGENT_USER!r} that agents run as has uid {entry.pw_uid} / gid {entry.pw_gid}: it "
            "must be an unprivileged user (scripts/ensure_agent_user.sh creates one)"
        )
    return entry.pw_uid, entry.pw_gid


_libc = ctypes.CDLL(None, use_errno=True)


def stage_readable(agent_dir: Path) -> tuple[str, Path]:
    """A copy of ``agent_dir`` whose top folder the agent's unprivileged user may open (a folder made by
    a root process, e.g. under a 0700 temporary or home folder). Builds extract agents world-readable
    (``builder/extract.py``), so only folders given by hand need it. Files keep their own modes: what the
    owner made unreadable stays unreadable to the agent. Returns (the staging folder, the copy)."""
    staging = tempfile.mkdtemp(prefix="arena-agent-")
    os.chmod(staging, 0o711)  # noqa: S103 - the agent's user may pass through, not list
    copy = Path(staging) / "agent"
    shutil.copytree(agent_dir, copy, symlinks=True)
    os.chmod(copy, (agent_dir.stat().st_mode & 0o777) | 0o755)  # noqa: S103 - its own code, read-only
    return staging, copy


def agent_userns(uid: int, gid: int) -> int:
    """A new user namespace for one sandbox (a descriptor on it), made by us as root: host root stays
    root in it (so bubblewrap can bind what root can read: a ``/root/.pyenv`` interpreter, a 0700
    temporary folder), ``SANDBOX_UID`` is ``uid``/``gid``, nothing else is mapped, and it may hold no
    further user namespace (``user.max_user_namespaces`` 0 in it: what ``--disable-userns`` does)."""
    holder = subprocess.Popen(
        ["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=_unshare_user, cwd="/"
    )
    try:
        for name, line in (
            ("uid_map", f"0 0 1\n{SANDBOX_UID} {uid} 1\n"),
            ("gid_map", f"0 0 1\n{SANDBOX_UID} {gid} 1\n"),
        ):
            with open(f"/proc/{holder.pid}/{name}", "w") as handle:
                handle.write(line)
        fd = os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait()
    limit = subprocess.run(
        ["/bin/sh", "-c", "echo 0 > /proc/sys/user/max_user_namespaces"],
        preexec_fn=functools.partial(_enter_userns, fd),
        pass_fds=(fd,),
        capture_output=True,
        cwd="/",
        check=False,
    )
    if limit.returncode != 0:
        os.close(fd)
        raise OSError(f"could not forbid nested user namespaces: {limit.stderr.decode(errors='replace')}")
    return fd


@contextlib.contextmanager
def file_identity(owner: tuple[int, int] | None) -> Iterator[None]:
    """Make this thread create files as ``owner`` (its file-system uid and gid; ``None``: unchanged).
    ``setfsuid`` is per thread: the referee's other threads keep root's rights."""
    if owner is None:
        yield
        return
    old_gid = _libc.setfsgid(owner[1])
    old_uid = _libc.setfsuid(owner[0])
    try:
        yield
    finally:
        _libc.setfsuid(old_uid)
        _libc.setfsgid(old_gid)


def _unshare_user() -> None:  # in the child between fork and exec (single-threaded)
    if _libc.unshare(_CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")


def _enter_userns(fd: int) -> None:  # in the child between fork and exec (single-threaded)
    if _libc.setns(fd, _CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "setns(CLONE_NEWUSER)")
