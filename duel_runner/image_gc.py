"""Agent images do not pile up: images of revisions that can no longer play leave this host's engine, the
rest stays under a size budget, and every revision's image size is recorded for its owner.

A 0.5 MB upload becomes a ~500 MB image (the base image's layers are shared; the agent's own layers are
what a removal frees). ``collect_images`` (the periodic task ``duel_runner.collect_images``, every
``IMAGE_GC_INTERVAL_SECONDS``) looks at the agent images of the engine it runs beside (label
``rl-arena=agent-image``) and at the revisions of this database whose ``agent_ref`` names them:

* **pinned** — a revision that may be launched at any moment: in the pipeline (uploaded, building, built,
  testing), in a QUEUED or RUNNING duel, in a waiting or running live game, or entered in a pending or
  running tournament. Never removed.
* **playing** — a competitor's current revision. Kept while the host's agent images fit the budget
  (``AGENT_IMAGE_CACHE_BYTES``); past it, the least recently used ones go first (a later duel pulls it back
  by digest, or rebuilds it from its zip: ``duel_runner.tasks.ensure_agent_images``).
* **retired** — every other revision (superseded, failed, rejected): its image is removed.

An image built or launched on this host within ``IMAGE_GC_GRACE_SECONDS`` (default an hour) is neither
removed nor evicted: a revision that just became retired may still be on its way into a container, and an
engine shared with another deployment may hold the same content (the same tag) for a revision that still
plays there.

An image several revisions share (the same content builds the same tag) takes the most protective class of
them. Images no revision of this database names are someone else's (another deployment on the engine, an
operator's) and are never touched. Removal takes the launch lock ``run_duel.sandbox.images`` holds from
"the image is here" to "the container exists" (exclusively and without waiting: a launch in progress wins),
asks the engine whether a container uses the image, and removes each of its names without ``force``, so the
engine itself refuses an image in use.

The registry copy of a retired revision is deleted only with ``AGENT_REGISTRY_DELETE_RETIRED=1`` (for a
registry this deployment alone uses: another deployment pushing the same content gets the same digest), and
only when no revision that may still play names the same digest (``DELETE /v2/<repo>/manifests/<digest>``;
the registry's own ``garbage-collect`` then frees the layers). A registry that refuses deletes (405) is
reported once per pass and left alone.

Every host is swept: beat's task lands on one worker at a time, so besides it each worker, after a build,
smoke test or duel of its own, runs a pass when its host's last one is older than
``IMAGE_GC_INTERVAL_SECONDS`` (``collect_if_due``: a stamp file beside the launch locks, taken without
waiting, so one process per host does it).
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from celery.signals import task_postrun
from django.conf import settings

from core.actions.images import record_image_sizes
from core.celery import app
from core.models import Competitor, Duel, PlaySession, Revision, Tournament, TournamentParticipant
from run_duel.api import AGENT_IMAGE_LABEL, ImageCache, RegistryConfig, parse_digest_ref

log = logging.getLogger(__name__)

#: Revision states of the pipeline: the revision is about to be built or smoke-tested.
PIPELINE_STATES = (
    Revision.State.UPLOADED,
    Revision.State.BUILDING,
    Revision.State.BUILT,
    Revision.State.TESTING,
)


@dataclass
class Collection:
    """What one pass did (sizes in bytes; ``own`` bytes exclude layers shared with other images)."""

    removed: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    freed_bytes: int = 0
    kept_bytes: int = 0
    budget_bytes: int = 0
    sizes_recorded: int = 0
    skipped_in_use: list[str] = field(default_factory=list)
    deleted_from_registry: list[str] = field(default_factory=list)


@dataclass
class _Image:
    id: str
    names: list[str]
    size: int
    own: int
    created: float
    refs: set[str] = field(default_factory=set)
    revisions: set[int] = field(default_factory=set)


def pinned_revision_ids() -> set[int]:
    """Revisions that may be launched at any moment (module docstring)."""
    pinned = set(Revision.objects.filter(state__in=PIPELINE_STATES).values_list("pk", flat=True))
    pending = Duel.objects.filter(state__in=[Duel.State.QUEUED, Duel.State.RUNNING])
    for r1, r2 in pending.values_list("revision_1_id", "revision_2_id"):
        pinned.update((r1, r2))
    live_games = PlaySession.objects.filter(
        status__in=[PlaySession.Status.QUEUED, PlaySession.Status.PLAYING]
    )
    pinned.update(live_games.values_list("revision_id", flat=True))
    entered = TournamentParticipant.objects.filter(
        tournament__state__in=[Tournament.State.PENDING, Tournament.State.RUNNING]
    )
    pinned.update(entered.values_list("revision_id", flat=True))
    return pinned


def playing_revision_ids() -> set[int]:
    """Every competitor's current revision (the one that plays its next duel)."""
    current = Competitor.objects.filter(current_revision__isnull=False)
    return set(current.values_list("current_revision_id", flat=True))


class ImageCollector:
    """One pass over this host's agent images (module docstring). ``cache`` gives the launch locks and
    last-use stamps of ``run_duel.sandbox.images``; its engine client is the one used."""

    def __init__(
        self, *, budget_bytes: int, cache: ImageCache, registry_delete: bool = False, grace_s: float = 0.0
    ) -> None:
        self.budget_bytes = budget_bytes
        self.cache = cache
        self.registry_delete = registry_delete
        self.grace_s = grace_s

    @property
    def api(self) -> Any:
        return self.cache.api

    def _engine_images(self) -> dict[str, _Image]:
        images: dict[str, _Image] = {}
        for item in self.api.df().get("Images") or []:
            if (item.get("Labels") or {}).get(AGENT_IMAGE_LABEL[0]) != AGENT_IMAGE_LABEL[1]:
                continue
            names = [
                n
                for n in [*(item.get("RepoTags") or []), *(item.get("RepoDigests") or [])]
                if n not in ("<none>:<none>", "<none>@<none>")
            ]
            size = int(item.get("Size") or 0)
            shared = max(0, int(item.get("SharedSize") or 0))
            images[item["Id"]] = _Image(
                id=item["Id"],
                names=names,
                size=size,
                own=max(0, size - shared),
                created=float(item.get("Created") or 0),
            )
        return images

    def _attach_revisions(self, images: dict[str, _Image]) -> None:
        by_name = {name: image for image in images.values() for name in image.names}
        rows = Revision.objects.exclude(agent_ref="").values_list("pk", "agent_ref", "image_bytes")
        sizes: dict[int, int] = {}
        for pk, ref, recorded in rows.iterator():
            image = by_name.get(ref)
            if image is None:
                continue
            image.refs.add(ref)
            image.revisions.add(pk)
            if recorded != image.size:
                sizes[pk] = image.size
        self._sizes = sizes

    def _last_use(self, image: _Image) -> float:
        """When a launch last stamped one of the image's references (``ImageCache.touch``)."""
        stamps = []
        for ref in image.refs:
            with contextlib.suppress(OSError):
                stamps.append(self.cache.lock_path(ref).stat().st_mtime)
        return max(stamps) if stamps else image.created  # never launched here: its build time

    def _remove(self, image: _Image) -> bool:
        """Remove every name of ``image`` unless a launch holds it or a container uses it."""
        locks = [self.cache.lock_path(ref) for ref in image.refs]
        return self.cache.remove_if_unused(image.id, image.names, locks)

    def run(self) -> Collection:
        """Record sizes, remove retired images, then evict playing ones past the budget (LRU first)."""
        images = self._engine_images()
        self._attach_revisions(images)
        ours = [image for image in images.values() if image.revisions]
        pinned = pinned_revision_ids()
        playing = playing_revision_ids()
        result = Collection(budget_bytes=self.budget_bytes)
        result.sizes_recorded = record_image_sizes(self._sizes)

        kept: list[_Image] = []
        recent = time.time() - self.grace_s
        for image in ours:
            if image.revisions & (pinned | playing) or self._last_use(image) > recent:
                kept.append(image)
            elif self._remove(image):
                result.removed.extend(sorted(image.refs))
                result.freed_bytes += image.own
            else:
                result.skipped_in_use.extend(sorted(image.refs))
                kept.append(image)

        usage = sum(image.own for image in kept)
        if self.budget_bytes > 0 and usage > self.budget_bytes:
            unpinned = [i for i in kept if not i.revisions & pinned and self._last_use(i) <= recent]
            evictable = sorted(unpinned, key=self._last_use)
            for image in evictable:
                if usage <= self.budget_bytes:
                    break
                if self._remove(image):
                    result.evicted.extend(sorted(image.refs))
                    result.freed_bytes += image.own
                    usage -= image.own
        result.kept_bytes = usage
        if self.registry_delete and self.cache.registry is not None:
            result.deleted_from_registry = delete_retired_from_registry(self.cache.registry, pinned | playing)
        if result.removed or result.evicted:
            log.info(
                "image collector: removed %d retired and %d least recently used image(s), %d bytes freed, "
                "%d bytes kept (budget %d)",
                len(result.removed),
                len(result.evicted),
                result.freed_bytes,
                usage,
                self.budget_bytes,
            )
        if self.budget_bytes > 0 and usage > self.budget_bytes:
            log.warning(
                "image collector: %d bytes of agent images in use exceed the budget of %d bytes "
                "(AGENT_IMAGE_CACHE_BYTES): everything left is pinned by pending work",
                usage,
                self.budget_bytes,
            )
        return result


def delete_retired_from_registry(registry: RegistryConfig, keep: set[int]) -> list[str]:
    """Delete from ``registry`` the manifests of revisions outside ``keep`` whose digest no revision of
    ``keep`` shares; returns the references deleted (a manifest already gone counts as done)."""
    prefix = registry.repository("") + "/"
    kept_digests: set[str] = set()
    retired: set[str] = set()
    for pk, ref in Revision.objects.exclude(agent_ref="").values_list("pk", "agent_ref").iterator():
        parsed = parse_digest_ref(ref)
        if parsed is None or not parsed[0].startswith(prefix):
            continue
        if pk in keep:
            kept_digests.add(parsed[1])
        else:
            retired.add(ref)
    deleted: list[str] = []
    for ref in sorted(retired):
        repository, digest = parse_digest_ref(ref) or ("", "")
        if digest in kept_digests:
            continue
        path = repository[len(registry.host) + 1 :]
        try:
            status = registry._request("DELETE", f"/v2/{path}/manifests/{digest}", timeout=10)
        except (OSError, ValueError) as exc:
            log.warning("image collector: the registry %s did not answer: %s", registry.base_url, exc)
            break
        if status in (200, 202):
            deleted.append(ref)
        elif status == 404:
            continue  # deleted by an earlier pass
        elif status == 405:
            log.warning(
                "image collector: the registry %s refuses deletes (enable storage.delete); "
                "AGENT_REGISTRY_DELETE_RETIRED has no effect",
                registry.base_url,
            )
            break
        else:
            log.warning("image collector: deleting %s from the registry answered HTTP %s", ref, status)
    if deleted:
        log.info("image collector: deleted %d retired image(s) from the registry", len(deleted))
    return deleted


def collect_images(
    *,
    budget_bytes: int | None = None,
    cache: ImageCache | None = None,
    registry_delete: bool | None = None,
    grace_s: float | None = None,
) -> Collection:
    """One collection pass on this host's engine with the configured budget (``AGENT_IMAGE_CACHE_BYTES``)
    and grace (``IMAGE_GC_GRACE_SECONDS``: an image built or launched more recently is never removed)."""
    budget = settings.AGENT_IMAGE_CACHE_BYTES if budget_bytes is None else budget_bytes
    delete = settings.AGENT_REGISTRY_DELETE_RETIRED if registry_delete is None else registry_delete
    grace = settings.IMAGE_GC_GRACE_SECONDS if grace_s is None else grace_s
    return ImageCollector(
        budget_bytes=budget, cache=cache or ImageCache.from_env(), registry_delete=delete, grace_s=grace
    ).run()


#: The file whose mtime is this host's last collection (beside the launch locks of the image cache).
STAMP_FILE = "collector.stamp"
#: Tasks after which a worker checks whether its host is due for a collection.
HOST_TASKS = ("builder.build_revision", "duel_runner.smoke_test_revision", "duel_runner.run_duel")


def collect_if_due(interval_s: float, *, cache: ImageCache | None = None) -> Collection | None:
    """A pass on this host's engine if the host's last one (by any process) is older than ``interval_s``;
    ``None`` when it is not due or another process of the host is collecting right now."""
    from run_duel.api import HostLock

    cache = cache or ImageCache.from_env()
    cache.lock_dir.mkdir(parents=True, exist_ok=True)
    stamp = cache.lock_dir / STAMP_FILE
    lock = HostLock(stamp)
    try:
        if not lock.try_exclusive():
            return None
        if time.time() - stamp.stat().st_mtime < interval_s and stamp.stat().st_size:
            return None
        stamp.write_bytes(b"1")  # the mtime is the stamp; the byte says "a pass ran here"
        return collect_images(cache=cache)
    finally:
        lock.close()


@task_postrun.connect
def _collect_after_host_work(sender: Any = None, **_: Any) -> None:
    """After a build, smoke test or duel on this worker: collect if the host is due (never raises)."""
    if getattr(sender, "name", "") not in HOST_TASKS or settings.SANDBOX != "docker":
        return
    try:
        collect_if_due(settings.IMAGE_GC_INTERVAL_SECONDS)
    except Exception:
        log.exception("image collector: the pass after %s failed", sender.name)


@app.task(name="duel_runner.collect_images", ignore_result=True)
def collect_images_task() -> dict[str, int]:
    """The periodic pass (Docker sandbox only); returns counts for the worker log."""
    if settings.SANDBOX != "docker":
        return {}
    done = collect_if_due(settings.IMAGE_GC_INTERVAL_SECONDS / 2)
    if done is None:  # this host was swept moments ago (or is being swept)
        return {}
    return {
        "removed": len(done.removed),
        "evicted": len(done.evicted),
        "freed_bytes": done.freed_bytes,
        "kept_bytes": done.kept_bytes,
        "sizes_recorded": done.sizes_recorded,
        "deleted_from_registry": len(done.deleted_from_registry),
    }


app.conf.beat_schedule.setdefault(
    "duel-runner-collect-images",
    {"task": "duel_runner.collect_images", "schedule": float(settings.IMAGE_GC_INTERVAL_SECONDS)},
)
