"""Agent images on a worker: fetch what is missing, by digest, once per host; keep a bounded cache.

An agent reference is what the builder recorded for a revision: ``<registry>/<repo>@sha256:<digest>`` when
a registry is configured (``run_duel.registry``), else a local image name. Before the Docker sandbox creates
a container it calls ``ImageCache.use(ref)``, which

1. holds a host-wide *shared* lock on the image (a ``flock`` on ``<runtime dir>/rl-arena-images/<key>.lock``:
   Celery's prefork children are separate processes, and every worker of a host shares the runtime dir) until
   the container exists, so the cache never removes an image between "it is here" and "a container uses it";
2. if the engine lacks the image, takes the lock *exclusively* and pulls it by digest: concurrent duels
   needing the same image wait for that one pull instead of starting their own;
3. checks that what the engine now holds carries exactly the requested digest (the engine also verifies the
   manifest's digest while pulling; both refusals are ``ImageDigestMismatch``);
4. stamps the lock file's mtime (the image's last use) and, after a pull, removes least recently used agent
   images past ``AGENT_IMAGE_CACHE_BYTES`` (see ``ImageCache.enforce_budget``).

Errors are infrastructure (``SandboxError`` subclasses), never a player's fault:

* ``ImageUnavailable``: the registry did not answer, refused us, or the engine failed: transient, retry later.
* ``ImageMissing``: the registry answers that the manifest does not exist (or, without a registry, the image
  is not in this engine): retrying cannot help; the platform rebuilds the revision from its stored zip or
  parks the duel.
* ``ImageDigestMismatch``: the registry served content that does not match the digest: refused.

Settings (environment, like the rest of ``run_duel``; ``core.settings`` validates the same variables):
``AGENT_REGISTRY`` and its credentials (``run_duel.registry``), ``AGENT_IMAGE_CACHE_BYTES`` (default 10 GiB;
0 = no limit) and ``AGENT_RUNTIME_DIR`` (where the lock files live).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from run_duel.registry import RegistryConfig, RegistryConfigError
from run_duel.sandbox.base import SandboxError, runtime_dir
from run_duel.settings import DEFAULT_CACHE_BYTES, run_duel_settings

log = logging.getLogger(__name__)

#: The label every agent image carries (``builder.image``); the cache never touches other images.
AGENT_IMAGE_LABEL = ("rl-arena", "agent-image")
#: How long one pull may take in all, and how long the engine may stay silent during it.
PULL_TIMEOUT_S = 900.0
PULL_STALL_S = 120.0
#: How long to wait for another process's pull of the same image (a little more than a pull).
LOCK_WAIT_S = PULL_TIMEOUT_S + 60.0
LOCK_FOLDER = "rl-arena-images"
_DIGEST_REF = re.compile(r"^(?P<repo>[^@\s]+)@(?P<digest>sha256:[0-9a-f]{64})$")


class ImageUnavailable(SandboxError):
    """The image could not be fetched now (registry unreachable or refusing, engine failing): transient."""


class ImageMissing(SandboxError):
    """The image exists nowhere we can fetch it from (the registry says its manifest is unknown)."""


class ImageDigestMismatch(SandboxError):
    """What the registry served does not match the requested digest: refused (infrastructure)."""


def parse_digest_ref(ref: str) -> tuple[str, str] | None:
    """``("host/repo", "sha256:...")`` for ``host/repo@sha256:<64 hex>``, else ``None``."""
    match = _DIGEST_REF.match(ref.strip())
    return (match["repo"], match["digest"]) if match else None


def cache_budget_from_env() -> int:
    """``AGENT_IMAGE_CACHE_BYTES`` (bytes, >= 0; 0 = no limit) of the settings (``run_duel.settings``)."""
    return run_duel_settings().image_cache_bytes


@dataclass(frozen=True)
class Ensured:
    """An image present in the engine: ``ref`` as asked, ``pulled`` if this call fetched it."""

    ref: str
    pulled: bool


class HostLock:
    """A ``flock`` on one file, shared or exclusive, waited for with a bound (never forever)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def acquire(self, *, exclusive: bool, timeout: float, what: str) -> None:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        deadline = time.monotonic() + timeout
        delay = 0.01
        while True:
            try:
                fcntl.flock(self.fd, mode | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ImageUnavailable(
                        f"waited {timeout:g} s for another process's pull of {what}; giving up for now"
                    ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def release(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)

    def try_exclusive(self) -> bool:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def close(self) -> None:
        os.close(self.fd)  # releases the lock


def _error_message(response: Any) -> str:
    try:
        return str(response.json().get("message") or response.text)
    except ValueError:
        return response.text or f"HTTP {response.status_code}"


def _classify(ref: str, message: str, status: int | None = None) -> SandboxError:
    """The typed error for an engine's pull failure ``message`` (the registry's error codes pass through)."""
    lower = message.lower()
    if "verification failed" in lower or "digest mismatch" in lower or "did not match" in lower:
        return ImageDigestMismatch(
            f"refused agent image {ref}: what the registry served does not match its digest ({message})"
        )
    # MANIFEST_UNKNOWN and NAME_UNKNOWN of the distribution spec: the registry answered, the image is gone.
    if "manifest unknown" in lower or "name unknown" in lower or "repository name not known" in lower:
        return ImageMissing(f"agent image {ref} is not in the registry any more ({message})")
    where = f"HTTP {status}: " if status else ""
    return ImageUnavailable(f"pulling agent image {ref} failed ({where}{message})")


class ImageCache:
    """The agent images of this host's Docker engine (module docstring)."""

    def __init__(
        self,
        *,
        registry: RegistryConfig | None,
        budget_bytes: int = DEFAULT_CACHE_BYTES,
        lock_dir: Path | None = None,
        client: Any = None,
    ) -> None:
        self.registry = registry
        self.budget_bytes = budget_bytes
        self.lock_dir = Path(lock_dir) if lock_dir else runtime_dir() / LOCK_FOLDER
        self._client = client

    @classmethod
    def from_env(cls, **overrides: Any) -> ImageCache:
        """The cache configured by the environment; raises ``SandboxError`` on a bad setting."""
        try:
            options: dict[str, Any] = {
                "registry": RegistryConfig.from_env(),
                "budget_bytes": cache_budget_from_env(),
            }
        except RegistryConfigError as exc:
            raise SandboxError(f"bad agent registry settings: {exc}") from exc
        options.update(overrides)
        return cls(**options)

    @property
    def api(self) -> Any:
        if self._client is None:
            from run_duel.sandbox.docker_client import get_client

            return get_client().api
        return self._client.api

    # -- locks and stamps ----------------------------------------------------------------------------

    def lock_path(self, ref: str) -> Path:
        """The launch lock file of ``ref`` on this host: held shared while a launch uses the image, and
        its mtime is the image's last use here."""
        parsed = parse_digest_ref(ref)
        key = parsed[1].split(":", 1)[1] if parsed else "ref-" + hashlib.sha256(ref.encode()).hexdigest()
        self.lock_dir.mkdir(parents=True, exist_ok=True)
        return self.lock_dir / f"{key}.lock"

    def touch(self, ref: str) -> None:
        """Record that ``ref`` was just used (its lock file's mtime is its last use)."""
        path = self.lock_path(ref)
        path.touch(exist_ok=True)
        os.utime(path)

    def last_used(self, digest: str) -> float | None:
        """When the image of ``digest`` was last used on this host (``None``: never recorded)."""
        try:
            return (self.lock_dir / f"{digest.split(':', 1)[-1]}.lock").stat().st_mtime
        except OSError:
            return None

    # -- presence ------------------------------------------------------------------------------------

    def present(self, ref: str) -> bool:
        """Whether the engine holds ``ref`` (a digest reference only matches an image pulled or pushed
        under exactly that digest). Raises ``ImageUnavailable`` when the engine does not answer."""
        from docker.errors import DockerException, NotFound
        from requests.exceptions import RequestException

        try:
            self.api.inspect_image(ref)
            return True
        except NotFound:
            return False
        except (DockerException, RequestException, OSError) as exc:
            raise ImageUnavailable(f"the Docker engine did not answer about image {ref}: {exc}") from exc

    # -- the launch path -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def use(self, ref: str) -> Iterator[Ensured]:
        """Make sure ``ref`` is in the engine (pulling it by digest if needed) and keep it there until the
        block ends: create the container inside the block. Raises ``ImageUnavailable``, ``ImageMissing``
        or ``ImageDigestMismatch``."""
        lock = HostLock(self.lock_path(ref))
        try:
            lock.acquire(exclusive=False, timeout=LOCK_WAIT_S, what=ref)
            pulled = False
            if not self.present(ref):
                parsed = parse_digest_ref(ref)
                if parsed is None:
                    raise ImageMissing(
                        f"agent image {ref!r} not found: it is not in this Docker engine and names no "
                        "registry digest to pull it by; rebuild the revision"
                    )
                # One pull per image per host: whoever holds the exclusive lock pulls, the others wait and
                # then find the image present. The shared lock is let go first: two processes converting
                # their shared locks at once would wait for each other.
                lock.release()
                lock.acquire(exclusive=True, timeout=LOCK_WAIT_S, what=ref)
                if not self.present(ref):
                    self._pull(ref, *parsed)
                    pulled = True
                lock.acquire(exclusive=False, timeout=LOCK_WAIT_S, what=ref)
                if not self.present(ref):
                    raise ImageUnavailable(f"agent image {ref} vanished from the engine right after its pull")
            self.touch(ref)
            if pulled:
                self.trim()
            yield Ensured(ref=ref, pulled=pulled)
        finally:
            lock.close()

    def ensure(self, ref: str) -> Ensured:
        """``use`` without holding the image afterwards (a check before a duel: fail early, pull early)."""
        with self.use(ref) as ensured:
            return ensured

    def _pull(self, ref: str, repository: str, digest: str) -> None:
        """Pull ``repository@digest`` through the engine, bounded in time; verify the digest."""
        from docker.auth import encode_header
        from requests.exceptions import RequestException

        api = self.api
        headers = {}
        auth = self.registry.auth_config() if self.registry else None
        if auth and repository.startswith(self.registry.host + "/"):  # type: ignore[union-attr]
            headers["X-Registry-Auth"] = encode_header(auth)
        started = time.monotonic()
        served_digest = ""
        try:
            # The SDK's pull waits without any timeout; this request is bounded per read (a stalled pull)
            # and in total (checked at every progress message).
            response = api.post(
                f"{api.base_url}/v{api.api_version}/images/create",
                params={"fromImage": repository, "tag": digest},
                headers=headers,
                stream=True,
                timeout=(10, PULL_STALL_S),
            )
            with contextlib.closing(response):
                if response.status_code >= 400:
                    raise _classify(ref, _error_message(response), response.status_code)
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    item = json.loads(line)
                    if item.get("error"):
                        raise _classify(ref, str(item.get("error")))
                    status = str(item.get("status") or "")
                    if status.startswith("Digest: "):
                        served_digest = status.split()[1]
                    if time.monotonic() - started > PULL_TIMEOUT_S:
                        raise ImageUnavailable(
                            f"pulling agent image {ref} took more than {PULL_TIMEOUT_S:g} s"
                        )
        except (RequestException, OSError, ValueError) as exc:
            raise ImageUnavailable(f"pulling agent image {ref} failed: {exc}") from exc
        if served_digest and served_digest != digest:
            raise ImageDigestMismatch(f"refused agent image {ref}: the engine pulled {served_digest} instead")
        self._verify(ref, repository, digest)
        log.info("pulled agent image %s in %.1f s", ref, time.monotonic() - started)

    def _verify(self, ref: str, repository: str, digest: str) -> None:
        """The engine's copy carries the requested digest (else it is removed again and refused)."""
        from docker.errors import DockerException, NotFound

        try:
            attrs = self.api.inspect_image(ref)
        except NotFound as exc:
            raise ImageUnavailable(f"agent image {ref} is missing right after its pull") from exc
        except DockerException as exc:
            raise ImageUnavailable(f"the Docker engine did not answer about image {ref}: {exc}") from exc
        if f"{repository}@{digest}" not in (attrs.get("RepoDigests") or []):
            with contextlib.suppress(DockerException):
                self.api.remove_image(ref)
            raise ImageDigestMismatch(
                f"refused agent image {ref}: the pulled image carries digests {attrs.get('RepoDigests')}"
            )

    # -- the bounded cache ---------------------------------------------------------------------------

    def trim(self) -> None:
        """``enforce_budget``, logging instead of raising: the cache is housekeeping, never a reason to
        fail a launch or a build."""
        try:
            self.enforce_budget()
        except Exception:
            log.exception("trimming the agent image cache failed")

    def _registry_digests(self, image: dict[str, Any]) -> list[str]:
        """The digests under which ``image`` can be pulled back from our registry."""
        if self.registry is None:
            return []
        prefix = self.registry.repository("")
        found = []
        for repo_digest in image.get("RepoDigests") or []:
            parsed = parse_digest_ref(repo_digest)
            if parsed and parsed[0].startswith(prefix):
                found.append(parsed[1])
        return found

    def usage(self) -> tuple[int, list[dict[str, Any]]]:
        """(the bytes the cached images hold, the cached images as the engine's ``df`` lists them).

        The cache is the agent images this host can pull back from the configured registry (they carry
        one of its digests); images built here and never pushed are not the cache's to remove, and do not
        count. An image's bytes are its size minus the layers it shares with other images (the base
        image): what removing it frees."""
        images = [
            image
            for image in self.api.df().get("Images") or []
            if (image.get("Labels") or {}).get(AGENT_IMAGE_LABEL[0]) == AGENT_IMAGE_LABEL[1]
            and self._registry_digests(image)
        ]
        return sum(_own_bytes(image) for image in images), images

    def enforce_budget(self) -> list[str]:
        """Remove least recently used cached images until ``usage`` fits ``budget_bytes``.

        Only images that no container uses and no launch holds (their lock is free) are removed, each
        reference one by one without ``force``, so the engine itself refuses an image a container uses.
        Returns the removed image ids."""
        if self.budget_bytes <= 0 or self.registry is None:
            return []
        total, images = self.usage()
        if total <= self.budget_bytes:
            return []
        candidates = [image for image in images if not image.get("Containers")]
        candidates.sort(key=self._last_use_of)
        removed: list[str] = []
        for image in candidates:
            if total <= self.budget_bytes:
                break
            if self._remove_unused(image):
                total -= _own_bytes(image)
                removed.append(image["Id"])
        if removed:
            log.info(
                "agent image cache: removed %d least recently used image(s), %d bytes kept",
                len(removed),
                total,
            )
        return removed

    def _last_use_of(self, image: dict[str, Any]) -> float:
        stamps = [self.last_used(digest) for digest in self._registry_digests(image)]
        known = [stamp for stamp in stamps if stamp is not None]
        return max(known) if known else float(image.get("Created") or 0)

    def _remove_unused(self, image: dict[str, Any]) -> bool:
        """Remove every reference of ``image`` unless a launch or a container uses it."""
        names = [*(image.get("RepoTags") or []), *(image.get("RepoDigests") or [])]
        locks = [self.lock_dir / f"{d.split(':', 1)[1]}.lock" for d in self._registry_digests(image)]
        return self.remove_if_unused(image["Id"], names, locks)

    def remove_if_unused(self, image_id: str, names: Iterable[str], lock_paths: Iterable[Path]) -> bool:
        """Remove every name of image ``image_id`` while holding the launch locks at ``lock_paths``
        exclusively (taken without waiting: a launch in progress wins). ``False``, removing nothing more,
        when a lock is held, a container uses the image, or the engine refuses (a container took it)."""
        from docker.errors import APIError, NotFound

        locks = [HostLock(path) for path in sorted(lock_paths)]
        try:
            if not all(lock.try_exclusive() for lock in locks):
                return False  # a launch is about to use it
            if self.api.containers(all=True, filters={"ancestor": image_id}):
                return False
            for name in names:
                if name in ("<none>:<none>", "<none>@<none>"):
                    continue
                try:
                    self.api.remove_image(name, force=False)
                except NotFound:
                    continue
                except APIError as exc:  # 409: a container uses it after all
                    log.info("agent images: keeping %s: %s", name, exc)
                    return False
            return True
        finally:
            for lock in locks:
                lock.close()


def _own_bytes(image: dict[str, Any]) -> int:
    size = int(image.get("Size") or 0)
    shared = int(image.get("SharedSize") or 0)
    return max(0, size - max(0, shared))


def ensure_images(refs: Iterable[str], *, cache: ImageCache | None = None) -> list[Ensured]:
    """Make sure every image of ``refs`` is in this host's engine (the duel runner's check before a duel:
    a missing image becomes ``ImageMissing`` before any match is played). Duplicates are fetched once."""
    cache = cache or ImageCache.from_env()
    return [cache.ensure(ref) for ref in dict.fromkeys(refs)]
