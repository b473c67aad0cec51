"""A working clone of the public submissions repository, driven through the ``git`` CLI.

Git runs with a clean environment (no inherited ``GIT_*`` variables, no system or user config, no
prompts) and a fixed identity. One process at a time may use a working clone: :meth:`PublicRepo.locked`
holds an exclusive file lock beside it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from agent_uploads.zip_validation import git_refuses


class PublishError(RuntimeError):
    """Publishing failed (git error, unreadable zip...). The message says what and why."""


class PublishRefused(PublishError):
    """The submission itself cannot be published (a path git refuses, a link, too large, a corrupt zip):
    trying again would fail the same way."""


#: The commit trailer naming the revision a commit publishes.
REVISION_TRAILER = "Revision-Id"
#: Largest total uncompressed size extracted from one submission.
MAX_EXTRACTED_BYTES = 200 * 1024 * 1024


def ensure_bare_repo(path: Path, branch: str = "main") -> None:
    """Create an empty bare repository at ``path`` unless one exists (the embedded default remote)."""
    if (path / "HEAD").is_file():
        return
    path.mkdir(parents=True, exist_ok=True)
    _run(["git", "init", "--quiet", "--bare", f"--initial-branch={branch}", str(path)], cwd=path.parent)


def _clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_AUTHOR_NAME": "RL Arena publisher",
        "GIT_AUTHOR_EMAIL": "publisher@rl-arena.invalid",
        "GIT_COMMITTER_NAME": "RL Arena publisher",
        "GIT_COMMITTER_EMAIL": "publisher@rl-arena.invalid",
    }
    env.update(extra or {})
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    try:
        proc = subprocess.run(
            args,
            cwd=cwd,
            env=env or _clean_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PublishError(f"{' '.join(args[:3])} failed: {exc}") from exc
    if proc.returncode != 0:
        raise PublishError(f"{' '.join(args[:3])} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def safe_extract(zip_path: Path, dest: Path) -> list[str]:
    """Extract ``zip_path`` into the empty folder ``dest``, refusing (``PublishRefused``) absolute paths,
    ``..``, links, every path component git refuses (``.git`` in any spelling: ``git_refuses``) and
    oversized content. Returns the extracted file names."""
    names = []
    try:
        with zipfile.ZipFile(zip_path) as zf:
            total = 0
            for info in zf.infolist():
                name = PurePosixPath(info.filename)
                if any(git_refuses(part) for part in name.parts):
                    raise PublishRefused(f"{zip_path.name}: git refuses the path {info.filename!r}")
                if info.is_dir():
                    continue
                if name.is_absolute() or ".." in name.parts or not name.parts or "\\" in info.filename:
                    raise PublishRefused(f"{zip_path.name}: unsafe path {info.filename!r}")
                if (info.external_attr >> 16) & 0o170000 == 0o120000:
                    raise PublishRefused(f"{zip_path.name}: symbolic link {info.filename!r}")
                total += info.file_size
                if total > MAX_EXTRACTED_BYTES:
                    raise PublishRefused(
                        f"{zip_path.name}: more than {MAX_EXTRACTED_BYTES} bytes uncompressed"
                    )
                target = dest.joinpath(*name.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
                names.append(str(name))
    except zipfile.BadZipFile as exc:
        raise PublishRefused(f"submission {zip_path.name} is not a readable zip: {exc}") from exc
    except OSError as exc:  # e.g. storage not mounted: may be ours and passing, retried
        raise PublishError(f"cannot read submission {zip_path}: {exc}") from exc
    return names


class PublicRepo:
    """A working clone of ``remote`` at ``workdir`` on ``branch``."""

    def __init__(
        self, remote: str, workdir: Path, branch: str = "main", ssh_command: str | None = None
    ) -> None:
        self.remote = remote
        self.workdir = Path(workdir)
        self.branch = branch
        self._env = _clean_env({"GIT_SSH_COMMAND": ssh_command} if ssh_command else None)

    def git(self, *args: str) -> str:
        """Run ``git args`` in the working clone; raises :class:`PublishError` on failure."""
        return _run(["git", *args], cwd=self.workdir, env=self._env)

    @contextmanager
    def locked(self) -> Iterator[PublicRepo]:
        """Hold the working clone's exclusive lock (blocks until it is free)."""
        self.workdir.parent.mkdir(parents=True, exist_ok=True)
        with open(self.workdir.parent / f".{self.workdir.name}.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield self
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def sync(self) -> None:
        """Make the working clone exactly the remote branch (cloning or re-initialising if needed)."""
        if not (self.workdir / ".git").is_dir():
            if self.workdir.exists():
                shutil.rmtree(self.workdir)
            self.workdir.mkdir(parents=True)
            self.git("init", "--quiet", f"--initial-branch={self.branch}")
            self.git("remote", "add", "origin", self.remote)
        else:
            self.git("remote", "set-url", "origin", self.remote)
        self.git("fetch", "--quiet", "--prune", "origin")
        if self.git("ls-remote", "--heads", "origin", self.branch).strip():
            self.git("checkout", "--quiet", "-B", self.branch, f"origin/{self.branch}")
            self.git("reset", "--quiet", "--hard", f"origin/{self.branch}")
        else:  # an empty remote: start the branch from nothing
            self.git("checkout", "--quiet", "--orphan", self.branch)
            self.git("rm", "-r", "--quiet", "--cached", "--ignore-unmatch", ".")
        self.git("clean", "--quiet", "-fdx")

    def published_revision_ids(self) -> set[str]:
        """The values of every ``Revision-Id`` trailer in the branch history, as git parses trailers
        (the last paragraph of a message only: text in a subject or body is never a trailer)."""
        if not self.head_exists():
            return set()
        out = self.git("log", f"--format=%(trailers:key={REVISION_TRAILER},valueonly,separator=%x00)%x00")
        return {value.strip() for value in out.split("\0") if value.strip()}

    def has_published(self, revision_id: int) -> bool:
        """Whether a commit of the branch carries exactly the trailer ``Revision-Id: <revision_id>``."""
        return str(revision_id) in self.published_revision_ids()

    def head_exists(self) -> bool:
        """Whether the branch has at least one commit."""
        try:
            self.git("rev-parse", "--verify", "--quiet", "HEAD^{commit}")
        except PublishError:
            return False
        return True

    def replace_folder(self, folder: PurePosixPath, zip_path: Path) -> None:
        """Replace the content of ``folder`` with the files of ``zip_path`` and stage the change."""
        target = self.workdir.joinpath(*folder.parts)
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        safe_extract(zip_path, target)
        # --force: a .gitignore among the submission's files must not leave some of them out.
        self.git("add", "--all", "--force", "--", str(folder))

    def commit_and_push(self, message: str) -> None:
        """Commit what is staged (even nothing: every revision gets its commit) and push the branch."""
        self.git("commit", "--quiet", "--allow-empty", "-m", message)
        self.git("push", "--quiet", "origin", f"HEAD:refs/heads/{self.branch}")
