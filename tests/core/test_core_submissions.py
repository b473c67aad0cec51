"""Uploading revisions: validation before storage, versions without races, the build queued on commit."""

import threading

import pytest
from core_testlib import zip_player

from core.actions import SubmissionError, submit_revision
from core.models import Build, Competitor, Revision


def test_upload_creates_competitor_revision_1_and_a_queued_build(environments, make_user, data_dir):
    user = make_user()
    revision = submit_revision(user, "tic-tac-toe", "my-bot", zip_player("random"), is_public=True)
    assert (revision.version, revision.state, revision.is_public) == (1, "UPLOADED", True)
    assert (data_dir / revision.zip_path).is_file()
    assert Build.objects.get(revision=revision).state == "QUEUED"
    assert Competitor.objects.get(owner=user).next_version == 2


def test_second_upload_gets_version_2(environments, make_user):
    user = make_user()
    submit_revision(user, "tic-tac-toe", "bot", zip_player("random"))
    assert submit_revision(user, "tic-tac-toe", "bot", zip_player("minimax")).version == 2


def test_build_task_is_sent_only_when_the_upload_commits(
    environments, make_user, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        submit_revision(make_user(), "tic-tac-toe", "bot", zip_player("random"))
    assert len(callbacks) == 1


def test_invalid_zip_is_refused_and_stores_nothing(environments, make_user, data_dir):
    with pytest.raises(SubmissionError, match="zip"):
        submit_revision(make_user(), "tic-tac-toe", "bot", b"this is not a zip file")
    assert not Competitor.objects.exists() and not Revision.objects.exists()
    assert not list((data_dir / "tmp").iterdir())


def test_zip_without_player_py_is_refused(environments, make_user):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("bot.py", "print(1)")
    with pytest.raises(SubmissionError, match=r"player\.py"):
        submit_revision(make_user(), "tic-tac-toe", "bot", buf.getvalue())


def test_oversized_upload_is_refused(environments, make_user, settings):
    settings.SUBMISSION_MAX_BYTES = 100
    with pytest.raises(SubmissionError, match="larger than"):
        submit_revision(make_user(), "tic-tac-toe", "bot", zip_player("minimax"))


def test_unknown_environment_is_refused(environments, make_user):
    with pytest.raises(SubmissionError, match="unknown environment"):
        submit_revision(make_user(), "chess", "bot", zip_player("random"))


def test_bad_competitor_name_is_refused(environments, make_user):
    with pytest.raises(SubmissionError, match="bad competitor name"):
        submit_revision(make_user(), "tic-tac-toe", "../etc", zip_player("random"))


@pytest.mark.django_db(transaction=True)
def test_concurrent_uploads_to_one_competitor_get_versions_1_and_2(environments, make_user):
    user = make_user()
    data = zip_player("random")
    barrier = threading.Barrier(2)
    versions, errors = [], []

    def upload():
        from django.db import connection

        try:
            barrier.wait()
            versions.append(submit_revision(user, "tic-tac-toe", "racer", data).version)
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=upload) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(versions) == [1, 2]
    assert Competitor.objects.get(name="racer").next_version == 3
