"""The upload store (``core.blobs``): uploads are content-addressed blobs in the database, so a worker
builds from it with nothing of the web host's DATA_DIR; a store that cannot give an upload back is the
platform's fault (retried), never the uploader's."""

from __future__ import annotations

import hashlib
import importlib
from pathlib import Path

import pytest
from core_testlib import is_postgres, run_pipeline_inline, wait_for, zip_player
from django.apps import apps

from builder import build_submission
from builder.tasks import build_revision
from core import blobs, storage
from core.actions import submit_revision
from core.models import Blob, BlobChunk, Build, Revision


def _upload(make_user, name: str = "random", player: str = "random") -> Revision:
    return submit_revision(make_user(), "tic-tac-toe", name, zip_player(player))


def test_an_upload_is_stored_once_by_its_digest_and_read_back_verified(
    environments, make_user, data_dir, tmp_path
):
    revision = _upload(make_user)
    cached = storage.absolute(revision.zip_path)
    content = cached.read_bytes()
    blob = Blob.objects.get(pk=revision.content_hash)
    assert (blob.size, hashlib.sha256(content).hexdigest()) == (len(content), revision.content_hash)
    out = tmp_path / "out.zip"
    blobs.write_to(revision.content_hash, out)
    assert out.read_bytes() == content
    # The same bytes uploaded again (another competitor) are the same blob.
    again = submit_revision(make_user(), "tic-tac-toe", "again", content)
    assert again.content_hash == revision.content_hash
    assert Blob.objects.count() == 1
    # Chunks stream in bounded pieces: a blob of several chunks reads back whole.
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(range(256)) * (blobs.CHUNK_BYTES // 256 * 2 + 7))
    digest = hashlib.sha256(big.read_bytes()).hexdigest()
    assert blobs.put_file(big, digest) is True
    assert BlobChunk.objects.filter(blob_id=digest).count() == 3
    blobs.write_to(digest, tmp_path / "big-out.bin")
    assert (tmp_path / "big-out.bin").read_bytes() == big.read_bytes()
    with pytest.raises(ValueError, match="does not hash"):
        blobs.put_file(big, "f" * 64)
    assert not Blob.objects.filter(pk="f" * 64).exists()


def test_a_build_on_a_machine_with_its_own_empty_data_dir_reads_the_store(
    environments, make_user, settings, tmp_path
):
    revision = _upload(make_user)
    settings.DATA_DIR = tmp_path / "worker-data"  # another machine: nothing of the web host's DATA_DIR
    settings.DATA_DIR.mkdir()
    revision = run_pipeline_inline(revision)
    assert revision.state == "ELIGIBLE", revision.error_message
    assert not (settings.DATA_DIR / revision.zip_path).exists()
    assert not list(storage.tmp_dir().iterdir())  # the fetched copy is not left behind


@pytest.mark.parametrize("fault", ["blob row missing", "chunk corrupted", "chunk missing"])
def test_an_upload_the_store_cannot_give_back_is_retried_as_ours_never_the_uploaders(
    fault, environments, make_user, settings, tmp_path
):
    revision = _upload(make_user)
    web_zip = storage.absolute(revision.zip_path)
    settings.DATA_DIR = tmp_path / "worker-data"
    settings.DATA_DIR.mkdir()
    if fault == "blob row missing":
        Blob.objects.filter(pk=revision.content_hash).delete()
    elif fault == "chunk corrupted":
        BlobChunk.objects.filter(blob_id=revision.content_hash, index=0).update(data=b"PK\x03\x04 not it")
    else:
        BlobChunk.objects.filter(blob_id=revision.content_hash).delete()
    build = Build.objects.get(revision=revision)
    build_revision(build.pk)
    build.refresh_from_db()
    revision.refresh_from_db()
    assert revision.state != "BUILD_FAILED" and revision.error_message == ""
    assert build.state == "QUEUED" and build.not_before is not None  # re-queued with backoff
    assert "upload store" in build.failure_reason, build.failure_reason
    # Once the store holds the bytes again, the retry builds it.
    Blob.objects.filter(pk=revision.content_hash).delete()
    blobs.put_file(web_zip, revision.content_hash)
    Build.objects.filter(pk=build.pk).update(not_before=None)
    revision = run_pipeline_inline(revision)
    assert revision.state == "ELIGIBLE", revision.error_message


def test_a_zip_that_cannot_be_read_in_a_build_is_infra_not_an_invalid_submission(tmp_path):
    result = build_submission(tmp_path / "gone.zip", backend="local", work_dir=tmp_path / "builds")
    assert (result.ok, result.error_kind) == (False, "INFRA"), result
    assert "cannot be read" in result.error


def test_an_upload_from_before_the_store_is_copied_in_or_read_from_its_zip(environments, make_user, tmp_path):
    revision = _upload(make_user)
    Blob.objects.all().delete()  # as uploaded before the store existed
    with blobs.local_copy(revision) as path:  # the web host still has its zip
        assert path == storage.absolute(revision.zip_path).resolve()
    migration = importlib.import_module("core.migrations.0016_blob_store")
    migration.store_existing_uploads(apps, None)
    assert Blob.objects.filter(pk=revision.content_hash).exists()
    storage.absolute(revision.zip_path).unlink()
    with blobs.local_copy(revision) as path:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == revision.content_hash
    # A zip altered on disk is neither copied in nor used: the store's bytes are.
    Blob.objects.all().delete()
    storage.absolute(revision.zip_path).write_bytes(b"altered")
    migration.store_existing_uploads(apps, None)
    assert not Blob.objects.exists()
    with pytest.raises(blobs.BlobUnavailable), blobs.local_copy(revision):
        pass


@pytest.mark.slow
@pytest.mark.redis
def test_a_worker_with_its_own_empty_data_dir_builds_an_upload_made_on_the_web_host(
    start_worker, environments, make_user, data_dir, tmp_path
):
    if not is_postgres():
        pytest.skip("machines of a fleet share PostgreSQL and Redis (SQLite's broker lives in DATA_DIR)")
    worker_data = tmp_path / "worker-data"
    worker_data.mkdir()
    worker = start_worker(DATA_DIR=str(worker_data))
    revision = _upload(make_user)
    final = {"ELIGIBLE", "BUILD_FAILED", "TEST_FAILED"}
    wait_for(
        lambda: Revision.objects.get(pk=revision.pk).state in final, 120, "the worker to build and test it"
    )
    revision.refresh_from_db()
    assert revision.state == "ELIGIBLE", (revision.error_message, worker.log()[-3000:])
    assert Path(revision.agent_ref).is_relative_to(worker_data)  # built on the worker's own disk
    assert not (worker_data / revision.zip_path).exists()
    assert not list((worker_data / "tmp").iterdir())


def test_retention_deletes_a_stored_upload_only_when_no_kept_revision_shares_it(
    environments, make_user, settings
):
    from datetime import timedelta

    from django.utils import timezone

    from ops.retention import prune

    settings.RETENTION_UNPLAYABLE_ZIPS_DAYS = 14
    failed = _upload(make_user, "failed", "random")
    shared = _upload(make_user, "shared", "minimax")
    same_bytes = storage.absolute(shared.zip_path)
    twin = submit_revision(make_user(), "tic-tac-toe", "twin", same_bytes)
    Revision.objects.filter(pk__in=[failed.pk, shared.pk]).update(
        state=Revision.State.BUILD_FAILED, created_at=timezone.now() - timedelta(days=20)
    )
    assert prune(dry_run=True).blobs_deleted == 1
    assert Blob.objects.count() == 2
    report = prune()
    assert (report.zips_deleted, report.blobs_deleted) == (2, 1)
    assert list(Blob.objects.values_list("pk", flat=True)) == [twin.content_hash]  # the twin still plays
    assert not BlobChunk.objects.filter(blob_id=failed.content_hash).exists()


def test_the_source_download_is_served_from_the_store_when_this_host_lost_its_zip(
    environments, make_user, client
):
    from django.urls import reverse

    owner = make_user()
    revision = submit_revision(owner, "tic-tac-toe", "mine", zip_player("random"))
    cached = storage.absolute(revision.zip_path)
    content = cached.read_bytes()
    cached.unlink()
    client.force_login(owner)
    response = client.get(reverse("web:revision-download", args=[revision.pk]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == content
    assert not list(storage.tmp_dir().iterdir())
    Blob.objects.all().delete()  # neither the store nor this host has it: missing, never a server error
    assert client.get(reverse("web:revision-download", args=[revision.pk])).status_code == 404
