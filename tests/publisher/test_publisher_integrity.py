"""Nothing a user writes (display name, competitor name) decides where a revision is published or whether
it counts as published; against a real bare repository."""

from __future__ import annotations

from pub_helpers import git

from core.models import Revision
from publisher.actions import publish_revision, working_repo


def test_owner_and_agent_names_that_used_to_collide_get_distinct_folders(make_revision, clone):
    # "ada-b" + "c" and "ada" + "b-c" both mapped to ada-b-c/: the second overwrote the first.
    first = make_revision(owner_name="ada-b", name="c", files={"player.py": "# first\n"})
    second = make_revision(owner_name="ada", name="b-c", files={"player.py": "# second\n"})
    assert publish_revision(first.pk) == "PUBLISHED"
    assert publish_revision(second.pk) == "PUBLISHED"
    repo = clone()
    published = git("grep", "-h", "^# ", "HEAD", "--", "*player.py", cwd=repo).split()
    assert sorted(published) == ["#", "#", "first", "second"]  # both sources, whatever the layout
    assert (
        repo / "tic-tac-toe" / f"competitor-{first.competitor_id}" / "player.py"
    ).read_text() == "# first\n"
    assert (repo / "tic-tac-toe" / f"competitor-{second.competitor_id}" / "player.py").read_text() == (
        "# second\n"
    )
    assert sorted(p.name for p in (repo / "tic-tac-toe").iterdir()) == sorted(
        [f"competitor-{first.competitor_id}", f"competitor-{second.competitor_id}"]
    )


def test_a_display_name_carrying_a_trailer_cannot_mark_another_revision_published(make_revision, clone):
    victim = make_revision(files={"player.py": "# victim\n"})
    Revision.objects.filter(pk=victim.pk).update(publish_state=Revision.PublishState.PRIVATE)
    forger = make_revision(
        owner_name=f"Eve\n\nRevision-Id: {victim.pk}\nRevision-Id: {victim.pk}",
        name=f"x-Revision-Id-{victim.pk}",
        files={"player.py": "# forger\n"},
    )
    assert publish_revision(forger.pk) == "PUBLISHED"
    Revision.objects.filter(pk=victim.pk).update(publish_state=Revision.PublishState.PENDING)

    assert publish_revision(victim.pk) == "PUBLISHED"
    repo = clone()
    assert "# victim" in git("log", "-p", cwd=repo)  # really pushed, not just marked
    assert (repo / "tic-tac-toe" / f"competitor-{victim.competitor_id}" / "player.py").read_text() == (
        "# victim\n"
    )
    log = git("log", "--format=%B", cwd=repo)
    assert "Eve" not in log and "x-Revision-Id" not in log  # no user text in any commit message
    assert len(git("log", "--format=%H", cwd=repo).split()) == 2


def test_revision_8_is_not_taken_for_published_by_revision_80(pub_settings, tmp_path):
    repo = working_repo()
    with repo.locked():
        repo.sync()
        repo.commit_and_push("Publish revision 80\n\nVersion: 1\nRevision-Id: 80\n")
        repo.commit_and_push("A subject naming Revision-Id: 8\n\nRevision-Id: 9\n")
        assert repo.has_published(80) and repo.has_published(9)
        assert not repo.has_published(8)
