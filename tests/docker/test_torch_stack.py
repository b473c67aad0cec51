"""torch agents build by default on the shared torch stack (``builder.stacks``), from a conda environment.yml.

The stack image (``rl-arena-agent-base-torch:1``: torch CPU in /opt/stacks/torch over the Python base image)
is built by ``scripts/build_stack_image.sh`` from the operator's wheel (cached afterwards). An agent whose
environment.yml names ``pytorch`` (conda style) and ``numpy`` is built FROM it: its image holds the stack's
layers unchanged, it installs only numpy (relaxed from the file's Python 3.7 pin), and it plays Connect
Four through torch in the Docker sandbox. A second torch agent reuses the stack: what it adds is small.
Two torch agent builds in all (the machine is small)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import uuid
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from dockertest_support import RANDOM_PLAYER, REPO, zip_folder
from registry_support import PrivateRegistry

from agent_uploads.zip_validation import validate_zip
from builder import build_submission
from builder.agent_packages import plan_packages
from builder.settings import BuilderSettings
from builder.stacks import PACKAGES_LABEL, STACK_LABEL, installed_stacks, push_stack
from builder.wheels import TargetPlatform
from run_duel.api import LaunchSpec, play_duel, validate_duel_json
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker

TORCH_AGENT = Path(__file__).resolve().parent / "torch_agent"
RL_ARENA = Path(__file__).resolve().parent / "rl_arena_environments"


@pytest.fixture(scope="module")
def torch_stack(base_image: str):
    """The torch stack image, built when missing (scripts/build_stack_image.sh; cached afterwards)."""
    from builder.stacks import installed_stacks

    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "build_stack_image.sh"), "torch"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(f"building the torch stack image failed:\n{result.stderr[-3000:]}")
    return next(s for s in installed_stacks(get_client()) if s.spec.name == "torch")


def _variant(tmp_path: Path, name: str) -> Path:
    """The torch agent under another content hash (another agent with the same environment.yml)."""
    folder = tmp_path / name
    shutil.copytree(TORCH_AGENT, folder)
    with (folder / "player.py").open("a") as handle:
        handle.write(f"\n# {name} {uuid.uuid4().hex}\n")  # a new agent at every run: never a cached image
    return zip_folder(folder, tmp_path / f"{name}.zip")


def _layers(image: str) -> list[str]:
    return get_client().images.get(image).attrs["RootFS"]["Layers"]


@pytest.mark.slow
def test_a_conda_torch_agent_builds_on_the_shared_stack_plays_and_a_second_one_adds_little(
    torch_stack, base_image: str, docker_sandbox, tmp_path: Path
) -> None:
    stack_layers = _layers(torch_stack.image)
    stack_own = torch_stack.size_bytes - get_client().images.get(base_image).attrs["Size"]

    first = build_submission(_variant(tmp_path, "first"), backend="docker", work_dir=tmp_path, registry=None)
    assert first.ok, f"{first.error}\n{first.log[-3000:]}"
    assert first.stack == torch_stack.describe() == f"torch {torch_stack.version_of('torch')}"
    # Built FROM the stack: its layers are the stack's, unchanged, then the agent's own.
    assert _layers(first.agent_ref)[: len(stack_layers)] == stack_layers
    # Only numpy was installed for it (the file's numpy=1.17.2 has no wheel for Python 3.11: relaxed).
    packages = dict(first.packages)
    assert list(packages) == ["numpy"], first.packages
    notes = "\n".join(first.package_notes)
    assert (
        f"numpy=1.17.2 (line 9) has no wheel for Python 3.11: installed numpy {packages['numpy']} instead"
        in notes
    )
    assert f"pytorch::pytorch=1.4 (line 10): {first.stack} from this server's shared stack instead" in notes
    for left_out in (
        "python=3.7 (line 7)",
        "pip=19.1.1 (line 8)",
        "cpuonly (line 11)",
        "cudatoolkit=10.1 (line 12)",
    ):
        assert f"left out {left_out}" in notes
    assert "installed numpy" in first.log and "left out cudatoolkit" in first.log  # the build log says it too
    # What the owner sees is what the agent adds: numpy, its files, our harness; not the stack's layers.
    assert first.added_bytes == first.image_size_bytes - torch_stack.size_bytes
    assert 0 < first.added_bytes < stack_own / 4, (first.added_bytes, stack_own)

    random_agent = build_submission(
        zip_folder(RANDOM_PLAYER, tmp_path / "random.zip"), backend="docker", work_dir=tmp_path, registry=None
    )
    assert random_agent.ok, random_agent.error
    label = f"torch-{uuid.uuid4().hex[:8]}"
    duel = play_duel(
        "connect-four",
        docker_sandbox,
        LaunchSpec(agent=first.agent_ref, labels={"duel": label, "seat": "1"}),
        LaunchSpec(agent=random_agent.agent_ref, labels={"duel": label, "seat": "2"}),
        matches=2,
    )
    validate_duel_json(duel)
    problems = [(m["result"], m["error_msg"]) for m in duel["matches"]]
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0, (
        duel["error_msg"],
        problems,
        duel["player_1_log"][-2000:],
    )
    assert f"torch {torch_stack.version_of('torch')}" in duel["player_1_log"], duel["player_1_log"][-2000:]

    second = build_submission(
        _variant(tmp_path, "second"), backend="docker", work_dir=tmp_path, registry=None
    )
    assert second.ok and not second.cached, second.error
    assert second.agent_ref != first.agent_ref and second.stack == first.stack
    assert _layers(second.agent_ref)[: len(stack_layers)] == stack_layers
    assert "from the wheel cache" in second.log  # nothing resolved or downloaded again
    assert 0 < second.added_bytes < stack_own / 4, (second.added_bytes, stack_own)
    for image in (first.agent_ref, second.agent_ref):  # new at every run: do not pile them up
        get_client().images.remove(image)


def test_the_package_caps_count_what_the_agent_adds_not_the_shared_stack(torch_stack, tmp_path: Path) -> None:
    settings = replace(BuilderSettings.from_env(), packages_max_mb=1)
    folder = tmp_path / "capped"
    folder.mkdir()
    (folder / "player.py").write_text((TORCH_AGENT / "player.py").read_text())
    (folder / "requirements.txt").write_text(f"torch>=2  # {uuid.uuid4().hex}\n")
    alone = build_submission(
        zip_folder(folder, tmp_path / "alone.zip"),
        backend="docker",
        work_dir=tmp_path,
        settings=settings,
        registry=None,
    )
    # torch's 800 MB are the stack's, not the agent's: a 1 MiB cap lets it build (nothing to install).
    assert alone.ok, f"{alone.error}\n{alone.log[-2000:]}"
    assert alone.stack == torch_stack.describe() and alone.packages == ()
    assert alone.added_bytes < 1024 * 1024, alone.added_bytes  # its files and our harness
    get_client().images.remove(alone.agent_ref)
    # What the agent installs itself is capped as always.
    (folder / "requirements.txt").write_text("torch>=2\nnumpy==1.23.5\n")
    more = build_submission(
        zip_folder(folder, tmp_path / "more.zip"),
        backend="docker",
        work_dir=tmp_path,
        settings=settings,
        registry=None,
    )
    assert not more.ok and more.error_kind == "BUILD_FAILED"
    assert "over this server's limit of 1 MiB" in more.error and "numpy" in more.error, more.error


def test_a_requirements_txt_pin_the_stack_cannot_meet_is_refused_naming_both(
    torch_stack, tmp_path: Path
) -> None:
    folder = tmp_path / "old-torch"
    folder.mkdir()
    (folder / "player.py").write_text((TORCH_AGENT / "player.py").read_text())
    (folder / "requirements.txt").write_text("numpy\ntorch==1.4.0\n")
    result = build_submission(
        zip_folder(folder, tmp_path / "old.zip"), backend="docker", work_dir=tmp_path, registry=None
    )
    assert not result.ok and result.error_kind == "BUILD_FAILED"
    version = torch_stack.version_of("torch")
    assert result.error.startswith(
        f"requirements.txt: torch==1.4.0 cannot be met: this server gives every agent torch {version}"
    )


def test_the_rl_arena_broken_environment_fixture_fails_its_build_naming_the_file_and_line(
    base_image: str, tmp_path: Path
) -> None:
    result = build_submission(
        RL_ARENA / "invalid_files.zip", backend="docker", work_dir=tmp_path, registry=None
    )
    assert not result.ok and result.error_kind == "BUILD_FAILED"
    assert result.error.startswith("environment.yml line 1: a conda environment file is a mapping"), (
        result.error
    )
    with zipfile.ZipFile(RL_ARENA / "invalid_files.zip") as zf:
        assert "player.py" in zf.namelist()  # the zip is otherwise a valid submission


@pytest.mark.slow  # pushes the base image's layers to a new registry
def test_a_build_host_without_the_stack_pulls_the_one_another_host_pushed(
    base_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``build_stack_image.sh --push`` on one host, ``AGENT_STACK_TORCH_IMAGE=<registry>/...`` on the others:
    the first agent there that needs torch pulls the stack (the same layers for every host). A stand-in stack
    image (the labels build_stack writes, no torch inside) keeps this test small: only resolution uses it."""
    client = get_client()
    local = f"rl-arena-test-stack-{uuid.uuid4().hex[:8]}:1"
    packages = json.dumps([["torch", "2.13.0+cpu"]])
    dockerfile = f"FROM {base_image}\nLABEL {STACK_LABEL}=torch {PACKAGES_LABEL}={json.dumps(packages)}\n"
    client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=local, rm=True, network_mode="none")
    registry = PrivateRegistry(tmp_path / "registry").start()
    remote = ""
    try:
        monkeypatch.setenv("AGENT_REGISTRY", registry.address)
        monkeypatch.setenv("AGENT_STACK_TORCH_IMAGE", local)
        (stack,) = [s for s in installed_stacks(client) if s.spec.name == "torch"]
        remote = push_stack(stack)
        assert remote == f"{registry.address}/{local}"
        client.images.remove(remote)
        client.images.remove(local)  # this host no longer has it under any name

        monkeypatch.setenv("AGENT_STACK_TORCH_IMAGE", remote)
        assert installed_stacks(client) == []
        folder = tmp_path / "agent"
        folder.mkdir()
        (folder / "player.py").write_text((TORCH_AGENT / "player.py").read_text())
        (folder / "requirements.txt").write_text("torch\n")
        target = TargetPlatform("3.11", "cp", ("cp311", "abi3", "none"), ("manylinux2014_x86_64",))
        settings = replace(BuilderSettings.from_env(), wheel_cache_dir=tmp_path / "wheels")
        plan = plan_packages(
            validate_zip(zip_folder(folder, tmp_path / "a.zip")), lambda: target, settings, client
        )
        assert plan.stack is not None and plan.stack.image == remote and plan.resolution is None
        assert client.images.get(remote).labels[STACK_LABEL] == "torch"
    finally:
        registry.stop()
        for name in (remote, local):
            with contextlib.suppress(Exception):
                client.images.remove(name)
