"""Build an agent image from a validated submission: pick the base (or stack) image, resolve its packages,
reuse the image when its tag and build key exist, else build it with our Dockerfile template
(``builder.dockerfile``) through the engine (``builder.engine``), then push it to the registry if any.

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
``<registry>/<repository>@sha256:<digest>``, the immutable reference workers pull
(``run_duel.sandbox.images``).
A push the registry refuses is an INFRA failure, never the submission's.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from typing import Any

import docker
from docker.errors import DockerException, ImageNotFound

from agent_uploads.languages import Language, detect_language
from agent_uploads.requirements import RequirementsError
from agent_uploads.zip_validation import ValidatedZip
from builder.agent_packages import PackagePlan, plan_packages
from builder.dockerfile import build_key, render_dockerfile, write_context
from builder.engine import ImageBuildError, probe_platform, push_image, run_build, split_tag
from builder.settings import BuilderSettings
from builder.stacks import StackError
from builder.wheels import WheelCache, WheelCacheError
from run_duel.api import RegistryConfig, RegistryConfigError
from run_duel.api import get_docker_client as get_client


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
            lambda: cache.platform(base_image_id, lambda: probe_platform(base_image_id)),
            settings,
            client,
        )
    except RequirementsError as exc:
        raise ImageBuildError(str(exc), kind="BUILD_FAILED") from exc
    except StackError as exc:
        raise ImageBuildError(str(exc), kind="INFRA") from exc
    except (WheelCacheError, DockerException, OSError, ValueError, KeyError) as exc:
        raise ImageBuildError(f"fetching the requirements failed on our side: {exc}", kind="INFRA") from exc


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
    pushed = push_image(built.image_id, split_tag(built.tag)[1], registry, settings.image_repository)
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
                client.api.tag(image.id, *split_tag(extra_tag))
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
        log, image_id = run_build(context, tag, settings)
    log = requirements_log + log
    try:
        if extra_tag:
            get_client().api.tag(image_id, *split_tag(extra_tag))
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
