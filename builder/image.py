"""Build an agent image from a validated submission with OUR Dockerfile template, per language.

Image layout (every language)::

    /opt/arena/...                 our harness, copied from run_duel/harness/ (Python, C++ header, Node.js)
    /agent/...                     the user's files, owned by root, read-only for the agent
    USER 10001                     never root at run time

The language comes from the entry file (``agent_uploads.languages``): ``player.py``/``main.py`` (Python, our
harness imports it), ``main.cpp`` (C++: every .cpp is compiled at build time, as user 10001, with g++
against ``/opt/arena/arena.hpp``; the entrypoint, ``launch_when_ready.sh``, execs the program once the
referee's socket exists) or ``main.js`` (Node.js runs our
``arena_harness.js``, which requires it). Each language has its own base image
(``scripts/build_base_image.sh``).

A Python agent's ``requirements.txt`` and conda ``environment.yml`` (``builder.agent_packages``) are
resolved wheels-only on this host into the shared wheel cache (``builder.wheels``); an agent that needs
torch is built FROM the shared torch stack image instead of the base image (``builder.stacks``); and a
first build stage installs exactly those wheels with ``--no-index`` as user 10001 under time, size and
file-count limits; the final image copies the result, root-owned and read-only,
to ``/opt/agent-packages``, which the harness adds to the path only in the agent's process once its seat is
ready (never on ``PYTHONPATH`` at start-up: a package's ``sitecustomize.py`` or ``.pth`` never runs before
that, nor in a warm container's factory). No build step ever has network (``network_mode=none``),
and none runs the submission's code.

Images are tagged ``<repository>:<content hash prefix>-<build key prefix>``, the build key hashing the
content, the harness, the base image id, the wheels and the limits (also kept as a label). Building the
same zip again finds the image by tag and returns at once; a tag is never re-pointed to a different image.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound
from docker.utils import kwargs_from_env
from requests.exceptions import RequestException

import run_duel
from agent_uploads.languages import Language, detect_language
from agent_uploads.requirements import RequirementsError
from agent_uploads.zip_validation import ValidatedZip, read_member_capped
from builder.agent_packages import PackagePlan, plan_packages
from builder.settings import BuilderSettings
from builder.stacks import StackError
from builder.wheels import PLATFORM_PROBE, Resolution, WheelCache, WheelCacheError
from run_duel.images import ImageCache, cache_budget_from_env, parse_digest_ref
from run_duel.registry import RegistryConfig, RegistryConfigError
from run_duel.sandbox.base import HARNESS_PYTHON_FLAGS
from run_duel.sandbox.docker_client import get_client

TEMPLATE_VERSION = "4"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
AGENT_UID = 10001
MAX_LOG_CHARS = 512 * 1024
HARNESS_DIR = Path(next(iter(run_duel.__path__))).resolve() / "harness"
HARNESS_PATH = HARNESS_DIR / "arena_harness.py"
IMAGE_FILES = Path(__file__).resolve().parent / "image_files"
PACKAGES_DIR = "/opt/agent-packages"
CPP_PROGRAM = "/opt/agent-bin/agent"
#: Our files copied to /opt/arena/ in each language's image (name in the image -> source).
ARENA_FILES: dict[str, dict[str, Path]] = {
    "python": {
        "arena_harness.py": HARNESS_PATH,
        "install_packages.sh": IMAGE_FILES / "install_packages.sh",
        "install_wheels.py": IMAGE_FILES / "install_wheels.py",
    },
    "cpp": {
        "arena.hpp": HARNESS_DIR / "arena.hpp",
        "compile_cpp.sh": IMAGE_FILES / "compile_cpp.sh",
        "launch_when_ready.sh": IMAGE_FILES / "launch_when_ready.sh",
    },
    "javascript": {"arena_harness.js": HARNESS_DIR / "arena_harness.js"},
}
#: Nothing of the agent's runs before its seat is ready: our Python harness starts isolated
#: (``HARNESS_PYTHON_FLAGS``; the packages are not on ``PYTHONPATH``, the harness adds them in the agent's
#: process once connected) and a C++ program starts only once the referee's socket exists, that is once
#: the data folder is filled (``launch_when_ready.sh``).
ENTRYPOINTS: dict[str, list[str]] = {
    "python": ["python3", *HARNESS_PYTHON_FLAGS, "/opt/arena/arena_harness.py", "--agent-dir", "/agent"],
    "cpp": ["/bin/sh", "/opt/arena/launch_when_ready.sh", CPP_PROGRAM],
    "javascript": ["node", "/opt/arena/arena_harness.js", "--agent-dir", "/agent"],
}
ENTRYPOINT = ENTRYPOINTS["python"]


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
    language: str = "python"
    packages: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (name, version) installed
    size_bytes: int = 0  # the image's size as the engine reports it (base layers included)
    added_bytes: int = 0  # what the agent adds over its base (or stack) image
    stack: str = ""  # the shared stack it is built on ("torch 2.13.0+cpu"), "" for none
    notes: tuple[str, ...] = ()  # about its packages: relaxed pins, entries left out, the stack used


def _final_lines(labels: dict, entrypoint: list[str], env: str) -> list[str]:
    label_args = " ".join(f"{key}={json.dumps(value)}" for key, value in sorted(labels.items()))
    return [
        f"LABEL {label_args}",
        f"ENV {env}",
        f"USER {AGENT_UID}:{AGENT_UID}",
        "WORKDIR /agent",
        "ENTRYPOINT " + json.dumps(entrypoint),
        "CMD []",
    ]


def render_dockerfile(
    base_image: str,
    *,
    labels: dict,
    language: str = "python",
    wheels: bool = False,
    settings: BuilderSettings | None = None,
) -> str:
    """Our Dockerfile for one language: the only one ever used (users cannot supply their own)."""
    settings = settings or BuilderSettings()
    lines: list[str] = []
    env = "HOME=/tmp"
    if language == "python":
        env = "PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp"
        if wheels:
            # Stage 1 installs the fetched wheels as the agent user, without network or index.
            lines += [
                f"FROM {base_image} AS packages",
                "COPY wheels/ /tmp/wheels/",
                "COPY arena/install_packages.sh arena/install_wheels.py /tmp/",
                f"RUN mkdir -m 0755 {PACKAGES_DIR} && chown {AGENT_UID}:{AGENT_UID} {PACKAGES_DIR}",
                f"USER {AGENT_UID}:{AGENT_UID}",
                f"RUN sh /tmp/install_packages.sh {settings.packages_timeout_s} "
                f"{settings.packages_max_mb * 1024 * 1024} {settings.packages_max_files}",
            ]
        lines += [f"FROM {base_image}"]
        if wheels:
            lines += [f"COPY --from=packages --chown=0:0 {PACKAGES_DIR} {PACKAGES_DIR}"]
        lines += [
            "COPY arena/ /opt/arena/",
            "COPY agent/ /agent/",
            # Precompile so a read-only root never makes the agent recompile at every start (non-fatal: a
            # syntax error is reported to the author when the harness imports player.py).
            "RUN (python3 -m compileall -q /agent /opt/arena >/dev/null 2>&1 || true) "
            "&& chmod -R a-w,a+rX /agent /opt/arena",
        ]
    elif language == "cpp":
        lines += [
            f"FROM {base_image}",
            "COPY arena/ /opt/arena/",
            "COPY agent/ /agent/",
            f"RUN chmod -R a-w,a+rX /agent /opt/arena && mkdir -m 0755 /tmp/agent-build "
            f"&& chown {AGENT_UID}:{AGENT_UID} /tmp/agent-build",
            # Started as root: it empties the build step's copies of the host's /etc/resolv.conf, /etc/hosts
            # and /etc/hostname, then compiles as the agent user.
            f"RUN sh /opt/arena/compile_cpp.sh {settings.build_timeout_s} /tmp/agent-build/agent",
            f"RUN install -D -o 0 -g 0 -m 0555 /tmp/agent-build/agent {CPP_PROGRAM} "
            "&& rm -rf /tmp/agent-build",
        ]
    elif language == "javascript":
        lines += [
            f"FROM {base_image}",
            "COPY arena/ /opt/arena/",
            "COPY agent/ /agent/",
            "RUN chmod -R a-w,a+rX /agent /opt/arena",
            # Parse (never run) main.js so a syntax error reaches its author at build time.
            f"USER {AGENT_UID}:{AGENT_UID}",
            "RUN node --check /agent/main.js >/tmp/check.log 2>&1 "
            "|| { sed 's/^/SYNTAX: /' /tmp/check.log; echo 'SYNTAX ERROR'; exit 1; }",
        ]
    else:
        raise ValueError(f"unknown agent language {language!r}")
    return "\n".join([*lines, *_final_lines(labels, ENTRYPOINTS[language], env)]) + "\n"


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


def _add_file(tar: tarfile.TarFile, name: str, path: Path) -> None:
    info = tarfile.TarInfo(name)
    info.size = path.stat().st_size
    info.mode = 0o644
    info.mtime = 0
    with path.open("rb") as handle:
        tar.addfile(info, handle)


def write_context(
    validated: ValidatedZip,
    dockerfile: str,
    out,
    *,
    language: str = "python",
    wheel_files: tuple[Path, ...] = (),
) -> None:
    """Write the build context tar to the file object ``out`` (agent files streamed from the zip, wheels
    from the cache)."""
    with tarfile.open(fileobj=out, mode="w") as tar:
        _add_bytes(tar, "Dockerfile", dockerfile.encode())
        _add_dir(tar, "arena")
        for name, source in sorted(ARENA_FILES[language].items()):
            _add_bytes(tar, f"arena/{name}", source.read_bytes())
        if wheel_files:
            _add_dir(tar, "wheels")
            for path in wheel_files:
                _add_file(tar, f"wheels/{path.name}", path)
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


def build_key(
    validated: ValidatedZip,
    base_image_id: str,
    settings: BuilderSettings,
    *,
    language: str = "python",
    resolution: Resolution | None = None,
) -> str:
    """Everything that determines the image's content, hashed."""
    h = hashlib.sha256()
    parts = [TEMPLATE_VERSION, language, validated.content_hash, base_image_id]
    for name, path in sorted(ARENA_FILES[language].items()):
        parts.append(f"{name}={hashlib.sha256(path.read_bytes()).hexdigest()}")
    if resolution is not None:
        parts += [w.sha256 for w in resolution.wheels]
        parts += [str(settings.packages_max_mb), str(settings.packages_max_files)]
    for part in parts:
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def image_tag(validated: ValidatedZip, settings: BuilderSettings, key: str) -> str:
    """The tag of a submission's image: its content hash, then its build key (base image, harness,
    settings). A tag is never re-pointed: a new base image or harness gives a new tag, and revisions built
    before keep running exactly the image they were smoke-tested with."""
    return f"{settings.image_repository}:{validated.content_hash[:20]}-{key[:12]}"


def _existing(client: docker.DockerClient, name: str, key: str):
    try:
        image = client.images.get(name)
    except ImageNotFound:
        return None
    labels = image.attrs.get("Config", {}).get("Labels") or {}
    return image if labels.get("rl-arena.build-key") == key else None


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


def resolve_requirements(
    validated: ValidatedZip, base_image_id: str, settings: BuilderSettings, client
) -> PackagePlan:
    """What a Python submission installs (``requirements.txt`` and a conda ``environment.yml``,
    ``builder.agent_packages``) and the stack image it builds on, if any. ``ImageBuildError`` when its
    packages cannot be installed."""
    try:
        cache = WheelCache(settings.wheel_cache)
        return plan_packages(
            validated,
            lambda: cache.platform(base_image_id, lambda: _probe_platform(base_image_id)),
            settings,
            client,
        )
    except RequirementsError as exc:
        raise ImageBuildError(str(exc), kind="BUILD_FAILED") from exc
    except StackError as exc:
        raise ImageBuildError(str(exc), kind="INFRA") from exc
    except (WheelCacheError, DockerException, OSError, ValueError, KeyError) as exc:
        raise ImageBuildError(f"fetching the requirements failed on our side: {exc}", kind="INFRA") from exc


def _probe_platform(image_id: str) -> str:
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


def _describe_image(image: Any) -> tuple[str, tuple[tuple[str, str], ...], int]:
    labels = image.attrs.get("Config", {}).get("Labels") or {}
    try:
        packages = tuple((str(n), str(v)) for n, v in json.loads(labels.get("rl-arena.packages", "[]")))
    except (ValueError, TypeError):
        packages = ()
    return labels.get("rl-arena.language", "python"), packages, int(image.attrs.get("Size") or 0)


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
        image=pushed,
        image_id=built.image_id,
        log=built.log + f"(pushed as {pushed})\n",
        cached=built.cached,
        tag=built.tag,
        language=built.language,
        packages=built.packages,
        size_bytes=built.size_bytes,
        added_bytes=built.added_bytes,
        stack=built.stack,
        notes=built.notes,
    )


def submission_language(validated: ValidatedZip) -> Language:
    """The language the submission's entry file declares (``ImageBuildError`` if none)."""
    language = detect_language(e.path for e in validated.entries)
    if language is None:
        raise ImageBuildError(
            "no entry file: the zip needs player.py, main.py or submission.py (Python), main.cpp (C++) or "
            "main.js (JavaScript)",
            kind="BUILD_FAILED",
        )
    return language


def _build_or_reuse(validated: ValidatedZip, settings: BuilderSettings, extra_tag: str | None) -> ImageBuild:
    """The local image for ``validated``: reused when its tag and build key exist, else built."""
    language = submission_language(validated).key
    base_name = settings.base_image_for(language)
    try:
        client = get_client()
        try:
            base = client.images.get(base_name)
        except ImageNotFound as exc:
            raise ImageBuildError(
                f"the {language} agent base image {base_name} is missing; run scripts/build_base_image.sh",
                kind="INFRA",
            ) from exc
    except DockerException as exc:
        raise ImageBuildError(f"the Docker engine is not available: {exc}", kind="INFRA") from exc
    plan = PackagePlan(None)
    if language == "python":
        plan = resolve_requirements(validated, base.id, settings, client)
    resolution, requirements_log = plan.resolution, plan.log
    try:
        if plan.stack is not None:  # built FROM the shared stack image: its layers are not the agent's
            base_name = plan.stack.image
            base = client.images.get(base_name)
        key = build_key(validated, base.id, settings, language=language, resolution=resolution)
        tag = image_tag(validated, settings, key)
        image = _existing(client, tag, key)
        if image is not None:
            if extra_tag:
                client.api.tag(image.id, *_split_tag(extra_tag))
            _lang, packages, size = _describe_image(image)
            return ImageBuild(
                image=extra_tag or tag,
                image_id=image.id,
                log=requirements_log + "(cached image reused)\n",
                cached=True,
                tag=tag,
                language=language,
                packages=packages,
                size_bytes=size,
                added_bytes=max(0, size - int(base.attrs.get("Size") or 0)),
                stack=plan.stack_label,
                notes=plan.notes,
            )
    except DockerException as exc:
        raise ImageBuildError(f"the Docker engine is not available: {exc}", kind="INFRA") from exc

    packages = tuple(resolution.packages()) if resolution else ()
    labels = {
        "rl-arena": "agent-image",
        "rl-arena.build-key": key,
        "rl-arena.content-hash": validated.content_hash,
        "rl-arena.language": language,
        "rl-arena.packages": json.dumps([list(p) for p in packages], separators=(",", ":")),
    }
    dockerfile = render_dockerfile(
        base_name, labels=labels, language=language, wheels=resolution is not None, settings=settings
    )
    cache = WheelCache(settings.wheel_cache)
    wheel_files = tuple(cache.wheel_path(w) for w in resolution.wheels) if resolution else ()
    with tempfile.TemporaryFile() as context:
        try:
            write_context(validated, dockerfile, context, language=language, wheel_files=wheel_files)
        except OSError as exc:  # e.g. a wheel trimmed from the cache meanwhile: ours, retried
            raise ImageBuildError(f"writing the build context failed: {exc}", kind="INFRA") from exc
        context.seek(0)
        log, image_id = _run_build(context, tag, settings)
    log = requirements_log + log
    try:
        if extra_tag:
            get_client().api.tag(image_id, *_split_tag(extra_tag))
        size = int(get_client().images.get(image_id).attrs.get("Size") or 0)
    except DockerException as exc:
        raise ImageBuildError(f"the Docker engine is not available: {exc}", kind="INFRA", log=log) from exc
    return ImageBuild(
        image=extra_tag or tag,
        image_id=image_id,
        log=log,
        cached=False,
        tag=tag,
        language=language,
        packages=packages,
        size_bytes=size,
        added_bytes=max(0, size - int(base.attrs.get("Size") or 0)),
        stack=plan.stack_label,
        notes=plan.notes,
    )


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


def _run_build(context, tag: str, settings: BuilderSettings) -> tuple[str, str]:
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
