"""The image collector against the real Docker engine and database: retired revisions' images go, pinned
and playing ones stay, an image a container uses is never removed, the budget evicts the least recently
used playing image first, and every revision's image size is recorded.

Each agent carries a random comment, so its content-derived tag is this test's own (other tests and other
databases sharing the engine never name it)."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
import zipfile
from pathlib import Path

import pytest

from core.models import Competitor, Duel, Revision
from duel_runner.image_gc import collect_images
from run_duel.sandbox.images import ImageCache
from tests.web import factories

pytestmark = [pytest.mark.docker, pytest.mark.django_db]


def _build(work: Path) -> str:
    from builder import build_submission

    archive = work / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("player.py", f"# {uuid.uuid4().hex}\nclass Player:\n    pass\n")
    result = build_submission(archive, backend="docker", work_dir=work, registry=None)
    assert result.ok, result.error
    return result.agent_ref


def _present(api, ref: str) -> bool:
    from docker.errors import NotFound

    try:
        api.inspect_image(ref)
        return True
    except NotFound:
        return False


def _rev(comp: Competitor, state: str, ref: str) -> Revision:
    rev = factories.revision(comp, state=state, with_logs=False)
    Revision.objects.filter(pk=rev.pk).update(agent_ref=ref)
    rev.refresh_from_db()
    return rev


def test_retired_images_go_pinned_and_used_ones_stay_and_the_budget_evicts_lru(
    base_image, tmp_path: Path
) -> None:
    from run_duel.sandbox.docker_client import get_client

    api = get_client().api
    superseded, playing, pinned_old, other_playing, in_use = (_build(tmp_path) for _ in range(5))
    created_container = None
    try:
        env = factories.environment("connect-four")
        owner = factories.user()
        comp = Competitor.objects.create(owner=owner, environment=env, name="gc-bot")
        r_superseded = _rev(comp, Revision.State.ELIGIBLE, superseded)
        r_pinned = _rev(comp, Revision.State.ELIGIBLE, pinned_old)  # superseded, but a duel waits for it
        r_in_use = _rev(comp, Revision.State.TEST_FAILED, in_use)
        r_playing = _rev(comp, Revision.State.ELIGIBLE, playing)  # the newest eligible: current
        r_same_content = _rev(comp, Revision.State.REJECTED, playing)  # retired, but shares the image
        comp.refresh_from_db()
        assert comp.current_revision_id == r_playing.pk
        other = Competitor.objects.create(owner=factories.user(), environment=env, name="other-bot")
        r_other = _rev(other, Revision.State.ELIGIBLE, other_playing)
        opponent = factories.competitor(env=env).current_revision  # no image of this test
        Duel.objects.create(
            environment=env, revision_1=r_pinned, revision_2=opponent, state=Duel.State.QUEUED
        )
        created_container = api.create_container(in_use, command=["true"], labels={"test": "image-gc"})

        engine_size = {
            ref: api.inspect_image(ref)["Size"]
            for ref in (superseded, playing, pinned_old, other_playing, in_use)
        }
        cache = ImageCache(registry=None, budget_bytes=0, lock_dir=tmp_path / "locks", client=get_client())
        recent = collect_images(grace_s=3600, budget_bytes=1, cache=cache)  # all built moments ago
        assert recent.removed == [] and recent.evicted == [] and _present(api, superseded)
        done = collect_images(grace_s=0, budget_bytes=0, cache=cache)

        assert done.removed == [superseded]
        assert not _present(api, superseded)
        assert done.skipped_in_use == [in_use]  # a container uses it: the engine's own refusal is never hit
        for ref in (playing, pinned_old, other_playing, in_use):
            assert _present(api, ref), ref
        sizes = dict(Revision.objects.filter(competitor__in=[comp, other]).values_list("pk", "image_bytes"))
        assert sizes == {
            r_superseded.pk: engine_size[superseded],
            r_pinned.pk: engine_size[pinned_old],
            r_in_use.pk: engine_size[in_use],
            r_playing.pk: engine_size[playing],
            r_same_content.pk: engine_size[playing],
            r_other.pk: engine_size[other_playing],
        }
        assert sizes[r_playing.pk] > 50 * 1024 * 1024  # the base image's layers count in what owners see

        # Over budget: the least recently used playing image goes; the pinned one never does.
        api.remove_container(created_container, force=True)
        created_container = None
        own = {image["Id"]: image["Size"] - image["SharedSize"] for image in api.df()["Images"]}
        own_of = {ref: own[api.inspect_image(ref)["Id"]] for ref in (playing, pinned_old, other_playing)}
        cache.touch(playing)
        cache.touch(other_playing)
        old = time.time() - 3600
        os.utime(cache.lock_path(other_playing), (old, old))
        budget = own_of[playing] + own_of[pinned_old]
        done = collect_images(grace_s=0, budget_bytes=budget, cache=cache)
        assert done.removed == [in_use]  # no container holds it any more: retired, removed
        assert done.evicted == [other_playing]
        assert not _present(api, other_playing)
        assert _present(api, playing) and _present(api, pinned_old)
        assert done.kept_bytes <= budget

        # A budget below the pinned image alone: every playing image goes, the pinned one stays.
        done = collect_images(grace_s=0, budget_bytes=1, cache=cache)
        assert done.evicted == [playing]
        assert _present(api, pinned_old)
    finally:
        if created_container is not None:
            api.remove_container(created_container, force=True)
        for ref in (superseded, playing, pinned_old, other_playing, in_use):
            if _present(api, ref):
                api.remove_image(ref, force=True)


def test_the_collector_is_a_periodic_task_of_the_worker() -> None:
    from django.conf import settings

    from core.celery import app

    app.loader.import_default_modules()  # what a worker does at start-up (autodiscovery included)
    assert "duel_runner.collect_images" in app.tasks
    entry = app.conf.beat_schedule["duel-runner-collect-images"]
    assert entry["task"] == "duel_runner.collect_images"
    assert entry["schedule"] == settings.IMAGE_GC_INTERVAL_SECONDS


def test_with_the_setting_retired_images_leave_the_registry_too(base_image, tmp_path: Path) -> None:
    from registry_support import PrivateRegistry

    from builder import build_submission
    from run_duel.registry import RegistryConfig
    from run_duel.sandbox.docker_client import get_client
    from run_duel.sandbox.images import parse_digest_ref

    api = get_client().api
    registry = PrivateRegistry(tmp_path / "registry").start()
    config = RegistryConfig.parse(registry.address)
    refs: list[str] = []
    try:
        for _ in range(2):
            archive = tmp_path / f"{uuid.uuid4().hex}.zip"
            with zipfile.ZipFile(archive, "w") as zf:
                zf.writestr("player.py", f"# {uuid.uuid4().hex}\nclass Player:\n    pass\n")
            result = build_submission(archive, backend="docker", work_dir=tmp_path, registry=config)
            assert result.ok, result.error
            refs.append(result.agent_ref)
        retired, playing = refs
        comp = Competitor.objects.create(
            owner=factories.user(), environment=factories.environment("connect-four"), name="reg-bot"
        )
        _rev(comp, Revision.State.ELIGIBLE, retired)
        _rev(comp, Revision.State.ELIGIBLE, playing)
        _rev(comp, Revision.State.REJECTED, playing)  # retired, but its digest is the playing one's

        def in_registry(ref: str) -> int:
            repository, digest = parse_digest_ref(ref) or ("", "")
            return registry.manifest(repository.split("/", 1)[1], digest)[0]

        cache = ImageCache(registry=config, budget_bytes=0, lock_dir=tmp_path / "locks", client=get_client())
        done = collect_images(grace_s=0, budget_bytes=0, cache=cache, registry_delete=False)
        assert done.removed == [retired] and done.deleted_from_registry == []
        assert in_registry(retired) == 200  # off by default: other deployments may share the registry

        done = collect_images(grace_s=0, budget_bytes=0, cache=cache, registry_delete=True)
        assert done.deleted_from_registry == [retired]
        assert in_registry(retired) == 404
        assert in_registry(playing) == 200
        assert (
            collect_images(grace_s=0, budget_bytes=0, cache=cache, registry_delete=True).deleted_from_registry
            == []
        )
    finally:
        registry.stop()
        for ref in refs:
            if _present(api, ref):
                attrs = api.inspect_image(ref)
                for name in [*(attrs.get("RepoTags") or []), *(attrs.get("RepoDigests") or [])]:
                    with contextlib.suppress(Exception):
                        api.remove_image(name, force=True)


@pytest.mark.django_db(transaction=True)
def test_a_build_records_its_image_size_for_the_owner(base_image, settings, tmp_path: Path) -> None:
    from builder.tasks import build_revision
    from core.actions import submit_revision
    from core.models import Build
    from run_duel.sandbox.docker_client import get_client

    settings.SANDBOX = "docker"
    settings.DATA_DIR = tmp_path / "data"
    factories.environment("connect-four")
    archive = tmp_path / "agent.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("player.py", f"# {uuid.uuid4().hex}\nclass Player:\n    pass\n")
    revision = submit_revision(factories.user(), "connect-four", "sized-bot", archive.read_bytes())
    build_revision(Build.objects.get(revision=revision).pk)
    revision.refresh_from_db()
    try:
        assert revision.state == Revision.State.BUILT, revision.error_message
        assert revision.image_bytes == get_client().api.inspect_image(revision.agent_ref)["Size"] > 0
    finally:
        if revision.agent_ref:
            get_client().api.remove_image(revision.agent_ref, force=True)


def test_every_host_collects_after_its_own_work_at_most_once_per_interval(
    base_image, settings, monkeypatch, tmp_path: Path
) -> None:
    """Beat's task reaches one worker at a time; the pass after a build, smoke test or duel reaches every
    host, throttled by a stamp beside the host's launch locks (and skipped while another process holds it)."""
    from celery.signals import task_postrun

    from builder.tasks import build_revision
    from duel_runner.image_gc import STAMP_FILE, collect_if_due
    from run_duel.sandbox.docker_client import get_client
    from run_duel.sandbox.images import LOCK_FOLDER, HostLock

    api = get_client().api
    monkeypatch.setenv("AGENT_RUNTIME_DIR", str(tmp_path / "runtime"))
    settings.SANDBOX = "docker"
    settings.IMAGE_GC_INTERVAL_SECONDS = 3600
    settings.IMAGE_GC_GRACE_SECONDS = 0
    retired = _build(tmp_path)
    try:
        comp = Competitor.objects.create(
            owner=factories.user(), environment=factories.environment("connect-four"), name="host-bot"
        )
        _rev(comp, Revision.State.TEST_FAILED, retired)

        task_postrun.send(sender=build_revision, task_id="t1", task=build_revision, args=(), kwargs={})
        assert not _present(api, retired)  # the worker's own pass removed it
        stamp = tmp_path / "runtime" / LOCK_FOLDER / STAMP_FILE
        assert stamp.stat().st_size == 1

        assert collect_if_due(3600) is None  # swept moments ago
        old = time.time() - 7200
        os.utime(stamp, (old, old))
        holder = HostLock(stamp)
        try:
            assert holder.try_exclusive()
            assert collect_if_due(3600) is None  # another process of the host is collecting
        finally:
            holder.close()
        assert collect_if_due(3600) is not None
    finally:
        if _present(api, retired):
            api.remove_image(retired, force=True)
