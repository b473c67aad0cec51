"""Talking to the Docker engine for a build: one build streamed with a wall-clock cap and no network in any
step (cancelled by dropping the connection), its log capped and summarised for the author, and the push of
a built image to the agent registry (named afterwards by the digest the registry reported).
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time

import docker
from docker.errors import APIError, DockerException
from docker.utils import kwargs_from_env
from requests.exceptions import RequestException

from builder.dockerfile import AGENT_UID
from builder.settings import BuilderSettings
from builder.wheels import PLATFORM_PROBE, WheelCacheError
from run_duel.api import (
    ImageCache,
    RegistryConfig,
    RegistryConfigError,
    cache_budget_from_env,
    parse_digest_ref,
)
from run_duel.api import get_docker_client as get_client

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MAX_LOG_CHARS = 512 * 1024


class ImageBuildError(Exception):
    """The build failed. ``kind`` is BUILD_FAILED (the submission's fault), BUILD_TIMEOUT or INFRA."""

    def __init__(self, message: str, *, kind: str, log: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.log = log


def _error_summary(log: str, fallback: str) -> str:
    lines = log.splitlines()
    packages = [ln.split("PACKAGES ERROR: ", 1)[1] for ln in lines if "PACKAGES ERROR: " in ln]
    if packages:
        return "; ".join(packages)
    if "COMPILE ERROR BEGIN" in lines:
        begin = lines.index("COMPILE ERROR BEGIN")
        end = lines.index("COMPILE ERROR END") if "COMPILE ERROR END" in lines else len(lines)
        return "\n".join(lines[begin + 1 : end])
    syntax = [ln[len("SYNTAX: ") :] for ln in lines if ln.startswith("SYNTAX: ")]
    if "SYNTAX ERROR" in lines:
        return "main.js does not parse:\n" + "\n".join(syntax[:20])
    return fallback


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


def split_tag(name: str) -> tuple[str, str]:
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


def run_build(context, tag: str, settings: BuilderSettings) -> tuple[str, str]:
    """Stream one build with a wall-clock cap and no network in any step; return (log, image id)."""
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
                network_mode="none",  # never any network: wheels come from the host's cache
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


def probe_platform(image_id: str) -> str:
    """The Python platform of ``image_id`` (``builder.wheels.PLATFORM_PROBE``'s output, run as the agent
    user without network): which wheels fit the agents built on it."""
    try:
        output = get_client().containers.run(
            image_id,
            ["python3", "-c", PLATFORM_PROBE],
            entrypoint=[],
            network_mode="none",
            user=f"{AGENT_UID}:{AGENT_UID}",
            remove=True,
            mem_limit="256m",
        )
    except DockerException as exc:
        raise WheelCacheError(f"probing the base image's Python platform failed: {exc}") from exc
    return output.decode()
