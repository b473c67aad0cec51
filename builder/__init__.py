"""Agent image building from a validated upload (a plain library; never imports Django). The upload
format itself (validation, languages, package files) is ``agent_uploads``'s.

Public API::

    from builder import build_submission, BuildResult
    result = build_submission(Path("bot.zip"), backend="docker", work_dir=Path("data/builds"))
    result.ok, result.agent_ref, result.error, result.log, result.content_hash, result.duration_s

See builder/README.md for the contract.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_uploads.upload import read_upload
from agent_uploads.zip_validation import UnreadableUpload, ValidationError, ZipLimits
from builder.extract import extract_cached
from builder.settings import BuilderSettings
from run_duel.api import RegistryConfig

#: ``build_submission(registry=FROM_ENV)``: the registry of the environment (``AGENT_REGISTRY``).
FROM_ENV = object()

__all__ = ["BuildResult", "BuilderSettings", "build_submission"]


@dataclass(frozen=True)
class BuildResult:
    """Outcome of one build.

    ``agent_ref`` is what a sandbox launches: an image name (docker; ``<registry>/<repo>@sha256:<digest>``
    when a registry is configured) or an extracted folder (local).
    ``error_kind`` is "" on success, else INVALID_SUBMISSION or BUILD_FAILED or BUILD_TIMEOUT (the
    submission's fault: show ``error`` to its author) or INFRA (ours: retry later).
    """

    ok: bool
    agent_ref: str
    log: str
    error: str
    content_hash: str
    duration_s: float
    error_kind: str = ""
    cached: bool = False
    language: str = ""  # "python", "cpp" or "javascript" (agent_uploads.languages), once the zip is valid
    packages: tuple[tuple[str, str], ...] = ()  # (name, version) installed from requirements.txt
    image_size_bytes: int = 0  # docker: the image's size (shared base layers included)
    added_bytes: int = 0  # docker: what the agent adds over its base or stack image (what its owner sees)
    stack: str = ""  # docker: the shared stack it is built on, e.g. "torch 2.13.0+cpu" ("" for none)
    package_notes: tuple[str, ...] = ()  # pins relaxed, environment.yml entries left out, the stack used


def build_submission(
    zip_path: Path,
    *,
    tag: str | None = None,
    backend: str = "docker",
    work_dir: Path,
    settings: BuilderSettings | None = None,
    limits: ZipLimits | None = None,
    registry: RegistryConfig | object | None = FROM_ENV,
) -> BuildResult:
    """Validate ``zip_path`` and make it runnable by the ``backend`` sandbox ("docker" or "local").

    docker: builds (or reuses) the image; ``tag`` adds a human name to it; with a ``registry`` (default:
    ``AGENT_REGISTRY`` of the environment, ``None``: none) pushes it and ``agent_ref`` is
    ``<registry>/<repository>@sha256:<digest>``. local: extracts into ``work_dir/<content_hash>/`` (reused
    if present). Never raises for a bad submission or a failed build:
    the problem is in ``BuildResult.error``.
    """
    started = time.monotonic()

    def done(**kwargs) -> BuildResult:
        return BuildResult(duration_s=round(time.monotonic() - started, 3), **kwargs)

    if backend not in ("docker", "local"):
        raise ValueError(f"unknown build backend {backend!r} (expected 'docker' or 'local')")
    try:
        validated = read_upload(Path(zip_path), limits)  # its package files kept: read once
    except UnreadableUpload as exc:  # our file could not be read: not the uploader's doing, retried
        return done(ok=False, agent_ref="", log="", error=str(exc), content_hash="", error_kind="INFRA")
    except ValidationError as exc:
        return done(
            ok=False, agent_ref="", log="", error=str(exc), content_hash="", error_kind="INVALID_SUBMISSION"
        )

    language = validated.language
    language_key = language.key if language else ""
    if backend == "local":
        from agent_uploads.local_support import local_refusal

        refusal, notes = local_refusal(validated)  # C++, JavaScript, packages: named, never ignored
        if refusal:
            return done(
                ok=False,
                agent_ref="",
                log="",
                error=refusal,
                content_hash=validated.content_hash,
                error_kind="BUILD_FAILED",
                language=language_key,
            )
        try:
            path, reused = extract_cached(validated, Path(work_dir))
        except ValidationError as exc:
            return done(
                ok=False,
                agent_ref="",
                log="",
                error=str(exc),
                content_hash=validated.content_hash,
                error_kind="INVALID_SUBMISSION",
            )
        except OSError as exc:
            return done(
                ok=False,
                agent_ref="",
                log="",
                error=f"extraction failed: {exc}",
                content_hash=validated.content_hash,
                error_kind="INFRA",
            )
        log = f"{'reused' if reused else 'extracted'} {len(validated.entries)} files into {path}\n"
        log += "".join(f"{note}\n" for note in notes)
        return done(
            ok=True,
            agent_ref=str(path),
            log=log,
            error="",
            content_hash=validated.content_hash,
            cached=reused,
            language=language_key,
            package_notes=tuple(notes),  # shown on the revision page
        )

    from builder.engine import ImageBuildError  # docker SDK only when needed
    from builder.image import build_image

    try:
        options: dict[str, Any] = {} if registry is FROM_ENV else {"registry": registry}
        built = build_image(validated, settings=settings, extra_tag=tag, **options)
    except ImageBuildError as exc:
        return done(
            ok=False,
            agent_ref="",
            log=exc.log,
            error=str(exc),
            content_hash=validated.content_hash,
            error_kind=exc.kind,
            language=language_key,
        )
    except ValidationError as exc:
        return done(
            ok=False,
            agent_ref="",
            log="",
            error=str(exc),
            content_hash=validated.content_hash,
            error_kind="INVALID_SUBMISSION",
        )
    return done(
        ok=True,
        agent_ref=built.image,
        log=built.log,
        error="",
        content_hash=validated.content_hash,
        cached=built.cached,
        language=built.language,
        packages=built.packages,
        image_size_bytes=built.size_bytes,
        added_bytes=built.added_bytes,
        stack=built.stack,
        package_notes=built.notes,
    )
