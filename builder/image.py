"""Build an agent image from a validated submission with OUR Dockerfile template.

Image layout::

    /opt/arena/arena_harness.py    our harness (ENTRYPOINT), copied from run_duel/harness/
    /agent/...                     the user's files, owned by root, read-only for the agent
    USER 10001                     never root at run time

The build context is written straight from the zip into a tar stream (nothing of the user's is extracted
to disk). Builds run with a memory cap, reduced CPU shares, a wall-clock timeout and no network, unless the
operator enabled package installs, in which case ``pip install -r requirements.txt`` runs with network.
Without installs, a ``requirements.txt`` must already be satisfied by the base image, else the build fails
with a message naming the missing package.

Images are tagged ``<repository>:<content hash prefix>-<build key prefix>``, the build key hashing the
content, the harness, the base image id and the settings (also kept as a label). Building the same zip
again finds the image by tag and returns at once; a tag is never re-pointed to a different image.

With a registry (``AGENT_REGISTRY``, ``run_duel.registry``) every image is then pushed to
``<registry>/<repository>:<same tag>`` and named by what the registry recorded:
``<registry>/<repository>@sha256:<digest>``, the immutable reference workers pull (``run_duel.images``).
A push the registry refuses is an INFRA failure, never the submission's.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
import socket
import tarfile
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound
from docker.utils import kwargs_from_env
from requests.exceptions import RequestException

import run_duel
from builder.settings import BuilderSettings
from builder.zip_validation import ValidatedZip, read_member_capped
from run_duel.images import ImageCache, cache_budget_from_env, parse_digest_ref
from run_duel.registry import RegistryConfig, RegistryConfigError
from run_duel.sandbox.docker_client import get_client

TEMPLATE_VERSION = "2"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
AGENT_UID = 10001
MAX_LOG_CHARS = 512 * 1024
HARNESS_PATH = Path(next(iter(run_duel.__path__))).resolve() / "harness" / "arena_harness.py"
CHECK_REQUIREMENTS_PATH = Path(__file__).resolve().parent / "image_files" / "check_requirements.py"
ENTRYPOINT = ["python3", "-B", "-s", "/opt/arena/arena_harness.py", "--agent-dir", "/agent"]


class ImageBuildError(Exception):
    """The build failed. ``kind`` is BUILD_FAILED (the submission's fault), BUILD_TIMEOUT or INFRA."""

    def __init__(self, message: str, *, kind: str, log: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.log = log


@dataclass(frozen=True)
class ImageBuild:
    """A built (or reused) image."""

    image: str  # what a sandbox launches: the local name, or <registry>/<repo>@sha256:<digest> once pushed
    image_id: str
    log: str
    cached: bool
    tag: str = ""  # the content-derived local tag


def render_dockerfile(base_image: str, *, has_requirements: bool, allow_installs: bool, labels: dict) -> str:
    """Our Dockerfile: the only one ever used (users cannot supply their own)."""
    lines = [
        f"FROM {base_image}",
        "COPY arena/ /opt/arena/",
        "COPY agent/ /agent/",
    ]
    run = []
    if has_requirements and allow_installs:
        run.append(
            "python3 -m pip install --no-cache-dir --no-input --disable-pip-version-check "
            "--root-user-action=ignore -r /agent/requirements.txt"
        )
    elif has_requirements:
        run.append("python3 /opt/arena/check_requirements.py /agent/requirements.txt")
    # Precompile so a read-only root never makes the agent recompile at every start (non-fatal: a syntax
    # error is reported to the author when the harness imports player.py).
    run.append("(python3 -m compileall -q /agent /opt/arena >/dev/null 2>&1 || true)")
    run.append("chmod -R a-w,a+rX /agent /opt/arena")
    lines.append("RUN " + " && ".join(run))
    label_args = " ".join(f"{key}={json.dumps(value)}" for key, value in sorted(labels.items()))
    lines += [
        f"LABEL {label_args}",
        "ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp",
        f"USER {AGENT_UID}:{AGENT_UID}",
        "WORKDIR /agent",
        "ENTRYPOINT " + json.dumps(ENTRYPOINT),
        "CMD []",
    ]
    return "\n".join(lines) + "\n"


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    info.mtime = 0
    tar.addfile(info)


def write_context(validated: ValidatedZip, dockerfile: str, out) -> None:
    """Write the build context tar to the file object ``out`` (agent files streamed from the zip)."""
    with tarfile.open(fileobj=out, mode="w") as tar:
        _add_bytes(tar, "Dockerfile", dockerfile.encode())
        _add_dir(tar, "arena")
        _add_bytes(tar, "arena/arena_harness.py", HARNESS_PATH.read_bytes())
        _add_bytes(tar, "arena/check_requirements.py", CHECK_REQUIREMENTS_PATH.read_bytes())
        _add_dir(tar, "agent")
        made_dirs: set[str] = set()
        budget = validated.limits.max_total_bytes
        with zipfile.ZipFile(validated.zip_path) as zf:
            for entry in validated.entries:
                parts = entry.path.split("/")
                for i in range(1, len(parts)):
                    folder = "agent/" + "/".join(parts[:i])
                    if folder not in made_dirs:
                        made_dirs.add(folder)
                        _add_dir(tar, folder)
                with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024) as spool:
                    size = read_member_capped(zf, entry, budget, spool.write)
                    budget -= size
                    spool.seek(0)
                    info = tarfile.TarInfo("agent/" + entry.path)
                    info.size = size
                    info.mode = 0o644
                    info.mtime = 1
                    tar.addfile(info, spool)


def build_key(validated: ValidatedZip, base_image_id: str, settings: BuilderSettings) -> str:
    """Everything that determines the image's content, hashed."""
    h = hashlib.sha256()
    for part in (
        TEMPLATE_VERSION,
        validated.content_hash,
        hashlib.sha256(HARNESS_PATH.read_bytes()).hexdigest(),
        hashlib.sha256(CHECK_REQUIREMENTS_PATH.read_bytes()).hexdigest(),
        base_image_id,
        str(settings.allow_package_installs and validated.has_requirements),
    ):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def image_tag(validated: ValidatedZip, settings: BuilderSettings, key: str) -> str:
    """The tag of a submission's image: its content hash, then its build key (base image, harness,
    settings). A tag is never re-pointed: a new base image or harness gives a new tag, and revisions built
    before keep running exactly the image they were smoke-tested with."""
    return f"{settings.image_repository}:{validated.content_hash[:20]}-{key[:12]}"


def _existing(client: docker.DockerClient, name: str, key: str) -> str | None:
    try:
        image = client.images.get(name)
    except ImageNotFound:
        return None
    labels = image.attrs.get("Config", {}).get("Labels") or {}
    return image.id if labels.get("rl-arena.build-key") == key else None


def _error_summary(log: str, fallback: str) -> str:
    requirement_lines = [
        ln[len("REQUIREMENTS ERROR: ") :] for ln in log.splitlines() if "REQUIREMENTS ERROR:" in ln
    ]
    if requirement_lines:
        return "; ".join(requirement_lines)
    pip_errors = [ln.strip() for ln in log.splitlines() if ln.strip().startswith("ERROR:")]
    if pip_errors:
        return "installing requirements.txt failed: " + " ".join(pip_errors[:3])
    return fallback


_FROM_ENV: Any = object()


def build_image(
    validated: ValidatedZip,
    *,
    settings: BuilderSettings | None = None,
    extra_tag: str | None = None,
    registry: RegistryConfig | None = _FROM_ENV,
) -> ImageBuild:
    """Build (or reuse) the image for ``validated``; raise ``ImageBuildError`` on failure.

    With a ``registry`` (default: ``AGENT_REGISTRY`` of the environment) the image is pushed there, every
    time (a cached image too: a push of layers the registry holds costs a few requests, and restores an
    image the registry lost), and ``ImageBuild.image`` is ``<registry>/<repository>@sha256:<digest>``."""
    settings = settings or BuilderSettings.from_env()
    if registry is _FROM_ENV:
        try:
            registry = RegistryConfig.from_env()
        except RegistryConfigError as exc:
            raise ImageBuildError(f"bad agent registry settings: {exc}", kind="INFRA") from exc
    built = _build_or_reuse(validated, settings, extra_tag)
    if registry is None:
        return built
    pushed = push_image(built.image_id, _split_tag(built.tag)[1], registry, settings.image_repository)
    return ImageBuild(
        image=pushed, image_id=built.image_id, log=built.log + f"(pushed as {pushed})\n", cached=built.cached
    )


def _build_or_reuse(validated: ValidatedZip, settings: BuilderSettings, extra_tag: str | None) -> ImageBuild:
    """The local image for ``validated``: reused when its tag and build key exist, else built."""
    try:
        client = get_client()
        try:
            base = client.images.get(settings.base_image)
        except ImageNotFound as exc:
            raise ImageBuildError(
                f"the agent base image {settings.base_image} is missing; run scripts/build_base_image.sh",
                kind="INFRA",
            ) from exc
        key = build_key(validated, base.id, settings)
        tag = image_tag(validated, settings, key)
        image_id = _existing(client, tag, key)
        if image_id is not None:
            if extra_tag:
                client.api.tag(image_id, *_split_tag(extra_tag))
            return ImageBuild(
                image=extra_tag or tag, image_id=image_id, log="(cached image reused)\n", cached=True, tag=tag
            )
    except DockerException as exc:
        raise ImageBuildError(f"the Docker engine is not available: {exc}", kind="INFRA") from exc

    installs = settings.allow_package_installs and validated.has_requirements
    labels = {
        "rl-arena": "agent-image",
        "rl-arena.build-key": key,
        "rl-arena.content-hash": validated.content_hash,
    }
    dockerfile = render_dockerfile(
        settings.base_image,
        has_requirements=validated.has_requirements,
        allow_installs=settings.allow_package_installs,
        labels=labels,
    )
    with tempfile.TemporaryFile() as context:
        write_context(validated, dockerfile, context)
        context.seek(0)
        log, image_id = _run_build(context, tag, settings, network=installs)
    if extra_tag:
        get_client().api.tag(image_id, *_split_tag(extra_tag))
    return ImageBuild(image=extra_tag or tag, image_id=image_id, log=log, cached=False, tag=tag)


def push_image(image_id: str, tag: str, registry: RegistryConfig, repository: str) -> str:
    """Push local image ``image_id`` to ``registry`` as ``<repository>:<tag>``; return the immutable
    reference ``<registry>/<repository>@sha256:<digest>`` (also stamped as used in this host's image
    cache, which is then trimmed to its budget). A refused or failed push is ``ImageBuildError`` of kind
    INFRA: our problem, never the submission's."""
    remote = registry.repository(repository)
    where = f"the agent registry {registry.base_url}"
    digest = ""
    try:
        api = get_client().api
        api.tag(image_id, remote, tag)
        for item in api.push(remote, tag=tag, stream=True, decode=True, auth_config=registry.auth_config()):
            if item.get("error"):
                raise ImageBuildError(
                    f"{where} refused the image {remote}:{tag}: {item['error']}", kind="INFRA"
                )
            aux = item.get("aux")
            if isinstance(aux, dict) and aux.get("Digest"):
                digest = str(aux["Digest"])
    except (DockerException, RequestException, OSError) as exc:
        raise ImageBuildError(f"pushing {remote}:{tag} to {where} failed: {exc}", kind="INFRA") from exc
    ref = f"{remote}@{digest}"
    if parse_digest_ref(ref) is None:
        raise ImageBuildError(f"{where} accepted {remote}:{tag} but reported no digest", kind="INFRA")
    try:
        cache = ImageCache(registry=registry, budget_bytes=cache_budget_from_env())
    except RegistryConfigError as exc:
        raise ImageBuildError(f"bad agent image cache setting: {exc}", kind="INFRA") from exc
    with contextlib.suppress(OSError):
        cache.touch(ref)
    cache.trim()
    return ref


def _split_tag(name: str) -> tuple[str, str]:
    repo, sep, tag = name.rpartition(":")
    if not sep or "/" in tag:
        return name, "latest"
    return repo, tag


def _shutdown_response(response) -> None:
    """Abort a streaming HTTP response from another thread (the daemon sees the client go away)."""
    if response is None:
        return
    try:
        raw = response.raw._fp.fp.raw
        getattr(raw, "_sock", raw).shutdown(socket.SHUT_RDWR)
    except (AttributeError, OSError):
        with contextlib.suppress(Exception):
            response.close()


def _run_build(context, tag: str, settings: BuilderSettings, *, network: bool) -> tuple[str, str]:
    """Stream one build with a wall-clock cap; return (log, image id)."""
    memory = settings.build_memory_mb * 1024 * 1024
    # A dedicated low-level client of the engine DOCKER_HOST names (like get_client's); on timeout we shut
    # its socket down, which makes the daemon cancel the build (and kill the running step's container).
    api = docker.APIClient(version="auto", timeout=settings.build_timeout_s + 30, **kwargs_from_env())
    chunks: list[str] = []
    size = 0
    state: dict = {"error": None, "image_id": None, "exc": None, "response": None, "cancelled": False}
    lock = threading.Lock()

    def consume() -> None:
        nonlocal size
        try:
            stream = api.build(
                fileobj=context,
                custom_context=True,
                tag=tag,
                rm=True,
                forcerm=True,
                pull=False,
                nocache=False,
                decode=True,
                network_mode=None if network else "none",
                container_limits={"memory": memory, "memswap": memory, "cpushares": 512},
            )
            response = getattr(getattr(stream, "gi_frame", None), "f_locals", {}).get("response")
            with lock:
                state["response"] = response
                cancelled = state["cancelled"]
            if cancelled:
                _shutdown_response(response)
                return
            for item in stream:
                text = _ANSI.sub("", item.get("stream") or item.get("status") or "")
                if "error" in item:
                    state["error"] = item.get("error") or "build failed"
                    text = (item.get("error") or "") + "\n"
                if "aux" in item and isinstance(item["aux"], dict):
                    state["image_id"] = item["aux"].get("ID") or state["image_id"]
                if text:
                    chunks.append(text)
                    size += len(text)
                    while size > MAX_LOG_CHARS and len(chunks) > 1:
                        size -= len(chunks.pop(0))
        except (DockerException, OSError, ValueError, RequestException) as exc:
            state["exc"] = exc

    started = time.monotonic()
    worker = threading.Thread(target=consume, name="image-build", daemon=True)
    worker.start()
    worker.join(settings.build_timeout_s)
    timed_out = worker.is_alive()
    if timed_out:
        with lock:
            state["cancelled"] = True
            response = state["response"]
        if response is not None:
            _shutdown_response(response)
        worker.join(30)
    api.close()
    log = "".join(chunks)
    if timed_out:
        raise ImageBuildError(
            f"the build took longer than {settings.build_timeout_s} s and was stopped",
            kind="BUILD_TIMEOUT",
            log=log,
        )
    if state["exc"] is not None:
        exc = state["exc"]
        kind = "BUILD_FAILED" if isinstance(exc, APIError) and exc.is_client_error() else "INFRA"
        raise ImageBuildError(f"the image build failed: {exc}", kind=kind, log=log)
    if state["error"]:
        raise ImageBuildError(_error_summary(log, state["error"]), kind="BUILD_FAILED", log=log)
    image_id = state["image_id"]
    if not image_id:
        try:
            image_id = get_client().images.get(tag).id
        except DockerException as exc:
            raise ImageBuildError(
                f"the build finished but {tag} is missing: {exc}", kind="INFRA", log=log
            ) from exc
    log += f"(built in {time.monotonic() - started:.1f} s)\n"
    return log, image_id
