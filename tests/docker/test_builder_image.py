"""Building agent images with the Docker backend of ``builder.build_submission``."""

from __future__ import annotations

import uuid
import zipfile
from pathlib import Path

import pytest
from dockertest_support import RANDOM_PLAYER, zip_folder

from builder import build_submission
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker


def _zip(tmp_path: Path, files: dict[str, str]) -> Path:
    path = tmp_path / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def _player(tmp_path: Path, marker: str, requirements: str | None = None) -> Path:
    """A minimal valid submission; ``marker`` makes its content (hence its image) unique."""
    files = {
        "player.py": f"# {marker}\nclass Player:\n    def __init__(self, train_mode=False):\n        pass\n"
        "    def start(self, state, valid_actions):\n        return int(valid_actions[0])\n"
        "    def step(self, state, valid_actions, prev_reward):\n        return int(valid_actions[0])\n"
        "    def end(self, state, prev_reward):\n        pass\n"
    }
    if requirements is not None:
        files["requirements.txt"] = requirements
    return _zip(tmp_path, files)


def test_building_the_same_zip_twice_reuses_the_image(base_image: str, tmp_path: Path) -> None:
    archive = _player(tmp_path, f"reuse {uuid.uuid4()}")
    first = build_submission(archive, backend="docker", work_dir=tmp_path)
    second = build_submission(archive, backend="docker", work_dir=tmp_path)
    try:
        assert first.ok and second.ok, (first.error, second.error)
        assert (first.cached, second.cached) == (False, True)
        assert first.agent_ref == second.agent_ref
        assert first.agent_ref.startswith(f"rl-arena-agent:{first.content_hash[:20]}-")
        assert "Successfully built" in first.log
    finally:
        if first.ok:
            get_client().api.remove_image(first.agent_ref)  # unique content: do not let them pile up


def test_the_same_content_in_a_top_folder_maps_to_the_same_image(base_image: str, tmp_path: Path) -> None:
    flat = zip_folder(RANDOM_PLAYER, tmp_path / "flat.zip")
    nested = zip_folder(RANDOM_PLAYER, tmp_path / "nested.zip", top="my_bot")
    first = build_submission(flat, backend="docker", work_dir=tmp_path)
    second = build_submission(nested, backend="docker", work_dir=tmp_path)
    assert first.ok and second.ok
    assert second.agent_ref == first.agent_ref
    assert second.cached


def test_tag_names_the_image(base_image: str, tmp_path: Path) -> None:
    archive = _player(tmp_path, "tagged")
    tag = f"rl-arena-test-tag:{uuid.uuid4().hex[:8]}"
    result = build_submission(archive, tag=tag, backend="docker", work_dir=tmp_path)
    try:
        assert result.ok, result.error
        assert result.agent_ref == tag
        assert get_client().images.get(tag).labels["rl-arena.content-hash"] == result.content_hash
    finally:
        get_client().api.remove_image(tag)


def test_image_runs_our_harness_as_uid_10001_with_read_only_agent_files(
    base_image: str, tmp_path: Path
) -> None:
    result = build_submission(_player(tmp_path, "layout"), backend="docker", work_dir=tmp_path)
    assert result.ok, result.error
    config = get_client().images.get(result.agent_ref).attrs["Config"]
    assert config["User"] == "10001:10001"
    assert "/opt/arena/arena_harness.py" in config["Entrypoint"]
    listing = get_client().containers.run(
        result.agent_ref,
        entrypoint=["stat", "-c", "%u %a %n", "/agent", "/agent/player.py", "/opt/arena/arena_harness.py"],
        network_mode="none",
        remove=True,
    )
    assert listing.decode().split("\n")[:3] == [
        "0 555 /agent",
        "0 444 /agent/player.py",
        "0 444 /opt/arena/arena_harness.py",
    ]


def test_a_bad_zip_builds_nothing(base_image: str, tmp_path: Path) -> None:
    archive = _zip(tmp_path, {"bot.py": "x = 1\n"})
    result = build_submission(archive, backend="docker", work_dir=tmp_path)
    assert (result.ok, result.error_kind) == (False, "INVALID_SUBMISSION")
    assert result.agent_ref == ""


def test_a_build_over_its_time_limit_is_stopped_and_leaves_no_image(base_image: str, tmp_path: Path) -> None:
    from builder.settings import BuilderSettings

    archive = _player(tmp_path, f"timeout {uuid.uuid4()}")
    settings = BuilderSettings(base_image=base_image, build_timeout_s=0)
    result = build_submission(archive, backend="docker", work_dir=tmp_path, settings=settings)
    assert (result.ok, result.error_kind) == (False, "BUILD_TIMEOUT")
    assert "the build took longer than 0 s and was stopped" in result.error
    tags = [tag for image in get_client().images.list() for tag in image.tags]
    assert not any(result.content_hash[:20] in tag for tag in tags)
