"""The publisher against a real local bare repository."""

from __future__ import annotations

import zipfile

import pytest
from pub_helpers import git

from core.models import Competitor, Revision
from publisher.actions import publish_due, publish_revision
from publisher.gitrepo import PublishError, safe_extract
from publisher.tasks import sweep


def commits(repo) -> list[str]:
    return git("log", "--format=%s", cwd=repo).splitlines()


def test_a_public_revision_lands_in_its_competitor_folder_as_one_commit(make_revision, clone):
    rev = make_revision(files={"player.py": "class Player: ...\n", "weights/model.txt": "42"})
    assert publish_revision(rev.pk) == "PUBLISHED"
    repo = clone()
    folder = repo / "tic-tac-toe" / f"competitor-{rev.competitor_id}"
    assert (folder / "player.py").read_text() == "class Player: ...\n"
    assert (folder / "weights" / "model.txt").read_text() == "42"
    assert commits(repo) == [f"Publish revision {rev.pk}: competitor {rev.competitor_id} v1 (tic-tac-toe)"]
    trailers = git("log", "-1", "--format=%(trailers:only)", cwd=repo).split("\n")
    assert trailers[:4] == [
        f"Competitor-Id: {rev.competitor_id}",
        "Version: 1",
        "Environment: tic-tac-toe",
        f"Revision-Id: {rev.pk}",
    ]
    rev.refresh_from_db()
    assert rev.publish_state == Revision.PublishState.PUBLISHED


def test_a_new_version_replaces_the_folder_content_in_a_new_commit(make_revision, clone):
    v1 = make_revision(files={"player.py": "v1", "old.txt": "gone soon"})
    publish_revision(v1.pk)
    v2 = make_revision(v1.competitor, files={"player.py": "v2"})
    publish_revision(v2.pk)
    repo = clone()
    folder = repo / "tic-tac-toe" / f"competitor-{v1.competitor_id}"
    assert (folder / "player.py").read_text() == "v2"
    assert not (folder / "old.txt").exists()
    assert [c.split(":")[0] for c in commits(repo)] == [
        f"Publish revision {v2.pk}",
        f"Publish revision {v1.pk}",
    ]


def test_publishing_twice_commits_once(make_revision, clone):
    rev = make_revision()
    publish_revision(rev.pk)
    Revision.objects.filter(pk=rev.pk).update(publish_state=Revision.PublishState.PENDING)
    assert publish_revision(rev.pk) == "PUBLISHED"
    assert len(commits(clone())) == 1


def test_a_private_revision_never_appears(make_revision, clone):
    public = make_revision(name="open")
    private = make_revision(name="secret", public=False, files={"player.py": "TOP SECRET"})
    Revision.objects.filter(pk=private.pk).update(publish_state=Revision.PublishState.PENDING)
    publish_due()
    repo = clone()
    assert not (repo / "tic-tac-toe" / f"competitor-{private.competitor_id}").exists()
    assert "TOP SECRET" not in git("log", "-p", "--all", cwd=repo)
    private.refresh_from_db()
    public.refresh_from_db()
    assert private.publish_state == Revision.PublishState.PRIVATE
    assert public.publish_state == Revision.PublishState.PUBLISHED


def test_a_competitor_made_private_before_publishing_is_not_published(make_revision, clone):
    rev = make_revision()
    Competitor.objects.filter(pk=rev.competitor_id).update(is_public=False)
    assert publish_revision(rev.pk) == "PRIVATE"
    assert not (clone() / "tic-tac-toe").exists()


def test_a_revision_that_is_not_eligible_is_not_published(make_revision, clone):
    rev = make_revision(state="TEST_FAILED")
    assert publish_revision(rev.pk) == "PRIVATE"


def test_a_failure_is_retried_by_the_sweep(make_revision, clone, pub_settings, tmp_path):
    real_remote = pub_settings.PUBLISH_REMOTE
    pub_settings.PUBLISH_REMOTE = str(tmp_path / "missing" / "nowhere.git")
    rev = make_revision()
    assert publish_revision(rev.pk) == "FAILED"
    pub_settings.PUBLISH_REMOTE = real_remote
    assert sweep() == 1
    rev.refresh_from_db()
    assert rev.publish_state == Revision.PublishState.PUBLISHED
    assert len(commits(clone())) == 1


def test_the_embedded_default_remote_is_a_bare_repository_under_data_dir(make_revision, pub_settings):
    pub_settings.PUBLISH_REMOTE = ""
    rev = make_revision()
    assert publish_revision(rev.pk) == "PUBLISHED"
    bare = pub_settings.DATA_DIR / "public_submissions.git"
    assert "v1 (tic-tac-toe)" in git("log", "--format=%s", "main", cwd=bare)


def test_unsafe_zip_entries_are_refused(tmp_path):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../escape.py", "x")
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(PublishError, match="unsafe path"):
        safe_extract(bad, dest)
    assert not (tmp_path / "escape.py").exists()


@pytest.mark.parametrize(
    "name", [".GIT/config", ".Git/hooks/post-checkout", "lib/.git./x", "GIT~1/config", ".g\u200cit/config"]
)
def test_a_revision_with_a_path_git_refuses_is_refused_for_good_not_retried(
    make_revision, clone, caplog, name
):
    """Older uploads may hold such paths (upload validation refuses them now): git would refuse them at
    every attempt, so the revision is REFUSED once, with the reason logged, and the sweep leaves it."""
    bad = make_revision(files={"player.py": "x", name: "[core]\n\tfsmonitor = touch /tmp/pwned\n"})
    assert publish_revision(bad.pk) == "REFUSED"
    assert f"git refuses the path {name!r}" in caplog.text
    good = make_revision(name="fine")
    assert sweep() == 1  # publishes the good one, never retries the refused one (retry delay 0 here)
    assert publish_due() == {}
    bad.refresh_from_db()
    assert bad.publish_state == Revision.PublishState.REFUSED
    repo = clone()
    assert not (repo / "tic-tac-toe" / f"competitor-{bad.competitor_id}").exists()
    assert (repo / "tic-tac-toe" / f"competitor-{good.competitor_id}" / "player.py").is_file()


def test_a_gitignore_in_a_submission_does_not_hide_its_files(make_revision, clone):
    rev = make_revision(files={"player.py": "x", ".gitignore": "*.bin\n", "weights.bin": "w"})
    assert publish_revision(rev.pk) == "PUBLISHED"
    folder = clone() / "tic-tac-toe" / f"competitor-{rev.competitor_id}"
    assert (folder / "weights.bin").read_text() == "w"
