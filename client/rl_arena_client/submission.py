"""Uploading an agent, from ``rl-arena submit`` or from a training loop.

``upload_agent`` is what ``rl-arena submit`` does before it follows the revision: check and zip a folder
(or take a zip as it is), refuse what the arena would refuse, upload it as a new revision.

``CheckpointSubmitter`` is for trainers: ``submit(folder, step)`` uploads a checkpoint without waiting, and
``poll()`` (cheap, throttled: call it from every training callback) follows the uploaded checkpoints and
says once each is built, failed, and rated::

    submitter = CheckpointSubmitter(Client(server, token), "connect-four", "my-bot", public=True)
    submitter.submit(Path("checkpoint-10000"), step=10000)
    ...
    submitter.poll()          # "my-bot v3 (step 10000): ELIGIBLE" then "my-bot: rated 12.3 after 20 matches"

The rating belongs to the competitor (the arena plays its newest eligible revision), so a rating is
reported with the revision that was playing when it was read.
"""

from __future__ import annotations

import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rl_arena_client.agents import read_zip_for_upload, resolve, syntax_error, upload_entry, zip_folder
from rl_arena_client.api import Client, CliError, encode_multipart

#: Revision states after which nothing changes any more but the competitor's rating.
FINAL_STATES = {"ELIGIBLE", "BUILD_FAILED", "TEST_FAILED", "REJECTED"}


def server_limit(client: Client) -> int | None:
    """The arena's upload limit in bytes (from ``GET /api/``), or ``None`` if it does not say."""
    try:
        info = client.request("GET", "/api/")
    except CliError:
        return None
    limit = info.get("submission_max_bytes") if isinstance(info, dict) else None
    return limit if isinstance(limit, int) else None


def upload_agent(
    client: Client,
    game: str,
    name: str,
    path: Path,
    *,
    public: bool = False,
    wipe_data: bool = False,
    agent_format: str = "auto",
) -> dict[str, Any]:
    """Upload the agent folder or zip at ``path`` as a new revision of ``name``; the revision's JSON, with
    ``zip_bytes`` the size uploaded. Raises ``CliError`` (nothing uploaded) for a missing path, a zip the
    arena cannot read, Python that does not compile, or a zip over the arena's limit."""
    if path.is_file():
        archive = read_zip_for_upload(path)
        with zipfile.ZipFile(path) as zf:
            python = (upload_entry(zf.namelist()) or "").endswith(".py")
        folder = resolve(str(path))[0] if python else None  # extracted, to compile its Python
    elif path.exists() or path.is_symlink():
        archive, folder = zip_folder(path), path.resolve()
    else:
        raise CliError(f"{path}: no such folder or zip")
    error = syntax_error(folder) if folder is not None else None
    if error:
        raise CliError(f"Python cannot compile your agent, nothing was uploaded:\n{error}")
    limit = server_limit(client)
    if limit is not None and len(archive) > limit:
        raise CliError(
            f"the zip is {len(archive) / 2**20:.1f} MB, over the arena's {limit // 2**20} MB limit; "
            "leave out training data and caches, or shrink the model"
        )
    body, ctype = encode_multipart(
        {
            "environment": game,
            "competitor_name": name,
            "is_public": "true" if public else "false",
            "wipe_data": "true" if wipe_data else "false",
            "agent_format": agent_format,
        },
        {"file": (f"{name}.zip", archive)},
    )
    rev = client.request("POST", "/api/revisions/", body=body, content_type=ctype)
    rev["zip_bytes"] = len(archive)
    return rev


@dataclass
class Checkpoint:
    """One uploaded checkpoint and what has been said about it."""

    step: int
    revision_id: int
    version: int | None
    competitor_id: int | None
    state: str = "UPLOADED"
    failure: str | None = None


class CheckpointSubmitter:
    """Submit checkpoints from a training loop and report their build and the competitor's rating."""

    def __init__(
        self,
        client: Client,
        game: str,
        name: str,
        *,
        public: bool = False,
        poll_every: float = 30.0,
        log: Callable[[str], None] = print,
    ) -> None:
        self.client = client
        self.game = game
        self.name = name
        self.public = public
        self.poll_every = poll_every
        self.log = log
        self.checkpoints: list[Checkpoint] = []
        self.rating: dict[str, Any] | None = None  # the competitor's, as last read
        self._last_poll = float("-inf")

    def submit(self, folder: Path, step: int) -> Checkpoint:
        """Upload ``folder`` (an agent folder) as a new revision, without waiting for its build."""
        rev = upload_agent(self.client, self.game, self.name, folder, public=self.public)
        checkpoint = Checkpoint(step, rev["id"], rev.get("version"), rev.get("competitor_id"), rev["state"])
        self.checkpoints.append(checkpoint)
        self.log(f"{self.name} v{checkpoint.version} (step {step}): uploaded, revision {rev['id']}")
        return checkpoint

    def poll(self, *, force: bool = False) -> dict[str, Any] | None:
        """Follow the pending checkpoints and the rating (at most every ``poll_every`` seconds unless
        ``force``); logs each change; returns the competitor's rating once it has one."""
        now = time.monotonic()
        if not self.checkpoints or (not force and now - self._last_poll < self.poll_every):
            return self.rating
        self._last_poll = now
        for cp in self.checkpoints:
            if cp.state in FINAL_STATES:
                continue
            rev = self.client.request("GET", f"/api/revisions/{cp.revision_id}/")
            if rev["state"] != cp.state:
                cp.state, cp.failure = rev["state"], rev.get("failure")
                why = f": {cp.failure.splitlines()[0]}" if cp.failure and cp.state != "ELIGIBLE" else ""
                self.log(f"{self.name} v{cp.version} (step {cp.step}): {cp.state}{why}")
        competitor_id = self.checkpoints[-1].competitor_id
        if competitor_id is not None:
            comp = self.client.request("GET", f"/api/competitors/{competitor_id}/")
            rating = comp.get("rating")
            if rating and rating.get("matches") and rating != self.rating:
                self.log(
                    f"{self.name}: rated {rating['conservative']:.2f} (mu {rating['mu']:.2f}, "
                    f"sigma {rating['sigma']:.2f}) after {rating['matches']} matches, "
                    f"playing v{comp.get('current_version')}"
                )
                self.rating = rating
        return self.rating

    def wait(self, timeout: float, *, poll: float = 5.0) -> dict[str, Any] | None:
        """Poll until every checkpoint is built (or failed) and the competitor is rated, or ``timeout``
        seconds passed; the rating, or ``None``."""
        deadline = time.monotonic() + timeout
        while True:
            rating = self.poll(force=True)
            settled = all(cp.state in FINAL_STATES for cp in self.checkpoints)
            if (settled and rating) or time.monotonic() > deadline:
                return rating
            if settled and not any(cp.state == "ELIGIBLE" for cp in self.checkpoints):
                return None  # nothing will play: no rating is coming
            time.sleep(poll)
