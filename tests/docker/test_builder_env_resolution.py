"""An environment.yml resolved into wheels (``builder.agent_packages``), with real pip against a private
PEP 503 index served over HTTP on this machine (no Docker, no PyPI): a pin without a wheel is relaxed to the
nearest version and remembered; requirements.txt pins are not; torch, directly or through a dependency,
is never fetched from the index when this host has no torch stack."""

from __future__ import annotations

import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_builder_packages import Server, _serve, make_wheel

from agent_uploads.requirements import RequirementsError
from agent_uploads.zip_validation import validate_zip
from builder.agent_packages import resolve_wanted, wanted_requirements
from builder.settings import BuilderSettings
from builder.stacks import STACKS, AgentStacks, Stack, StackError
from builder.wheels import TargetPlatform

TARGET = TargetPlatform(
    python="3.11", implementation="cp", abis=("cp311", "abi3", "none"), platforms=("manylinux2014_x86_64",)
)
VERSIONS = ("2.0.0", "2.0.3", "2.1.0")


@pytest.fixture(scope="module")
def index() -> Iterator[Server]:
    """relaxme 2.0.0, 2.0.3, 2.1.0 (no 1.x), a fake torch 1.5.0 and needs-torch 1.0, which requires it."""
    files: dict[str, bytes] = {}
    links = []
    for version in VERSIONS:
        name = f"relaxme-{version}-py3-none-any.whl"
        files[f"/files/{name}"] = make_wheel(
            "relaxme", version, {"relaxme/__init__.py": f"V = {version!r}\n"}
        )
        links.append(f'<a href="/files/{name}">{name}</a>')
    files["/simple/relaxme/"] = f"<html><body>{''.join(links)}</body></html>".encode()
    # A "torch" the index offers: without the stack's constraint pip would download it.
    name = "torch-1.5.0-py3-none-any.whl"
    files[f"/files/{name}"] = make_wheel("torch", "1.5.0", {"torch/__init__.py": "raise SystemExit('no')\n"})
    files["/simple/torch/"] = f'<html><body><a href="/files/{name}">{name}</a></body></html>'.encode()
    name = "needs_torch-1.0-py3-none-any.whl"
    files[f"/files/{name}"] = make_wheel("needs-torch", "1.0", {"needs_torch.py": ""}, requires=("torch>=1",))
    files["/simple/needs-torch/"] = f'<html><body><a href="/files/{name}">{name}</a></body></html>'.encode()
    server, httpd = _serve(files)
    yield server
    httpd.shutdown()


@pytest.fixture
def settings(index: Server, tmp_path: Path) -> BuilderSettings:
    return BuilderSettings(pip_index_url=f"{index.url}/simple", wheel_cache_dir=tmp_path / "wheels")


def _plan(settings: BuilderSettings, tmp_path: Path, files: dict[str, str]):
    path = tmp_path / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("player.py", "class Player:\n    pass\n")
        for name, text in files.items():
            archive.writestr(name, text)
    wanted = wanted_requirements(validate_zip(path), python=TARGET.python)
    return resolve_wanted(wanted, TARGET, settings, AgentStacks(stacks=[], cache_root=settings.wheel_cache))


ENVIRONMENT = "name: player\ndependencies:\n  - python=3.7\n  - pip:\n    - relaxme==1.0\n"


def test_an_environment_pin_without_a_wheel_is_relaxed_to_the_nearest_version_and_remembered(
    settings: BuilderSettings, index: Server, tmp_path: Path
) -> None:
    plan = _plan(settings, tmp_path, {"environment.yml": ENVIRONMENT})
    assert plan.resolution is not None and plan.resolution.packages() == [("relaxme", "2.0.3")]
    assert plan.notes == (
        "environment.yml: left out python=3.7 (line 3): the arena runs its own Python (3.11)",
        "environment.yml: relaxme==1.0 (line 5) has no wheel for Python 3.11: installed relaxme 2.0.3 "
        "instead (the nearest version on this server's package index)",
    )
    assert plan.stack is None
    before = len(index.requests)
    again = _plan(settings, tmp_path, {"environment.yml": ENVIRONMENT})
    assert again.resolution.cached and again.notes == plan.notes
    assert len(index.requests) == before  # the relaxation and the wheels came from the cache


def test_a_remembered_relaxation_names_the_lines_of_the_file_being_built(
    settings: BuilderSettings, tmp_path: Path
) -> None:
    _plan(settings, tmp_path, {"environment.yml": ENVIRONMENT})  # relaxme on line 5, remembered
    moved = "name: other\ndependencies:\n  - python=3.7\n  - pip=19.1.1\n  - pip:\n    - relaxme==1.0\n"
    plan = _plan(settings, tmp_path, {"environment.yml": moved})  # the same pin, now on line 6
    assert any("relaxme==1.0 (line 6) has no wheel" in note for note in plan.notes), plan.notes
    assert not any("(line 5)" in note for note in plan.notes), plan.notes


def test_a_requirements_txt_pin_is_never_relaxed(settings: BuilderSettings, tmp_path: Path) -> None:
    with pytest.raises(RequirementsError, match=r"requirements\.txt: no wheel of 'relaxme==1\.0'"):
        _plan(settings, tmp_path, {"requirements.txt": "relaxme==1.0\n"})


def test_both_files_are_installed_and_requirements_txt_wins_a_package_both_name(
    settings: BuilderSettings, tmp_path: Path
) -> None:
    environment = "dependencies:\n  - pip:\n    - relaxme==1.0\n    - needs-torch\n"
    with pytest.raises(StackError, match="this agent needs torch"):
        _plan(settings, tmp_path, {"requirements.txt": "relaxme==2.1.0\n", "environment.yml": environment})
    plan = _plan(
        settings,
        tmp_path,
        {
            "requirements.txt": "relaxme==2.1.0\n",
            "environment.yml": "dependencies:\n  - pip:\n    - relaxme==1.0\n",
        },
    )
    assert plan.resolution.packages() == [("relaxme", "2.1.0")]
    assert plan.notes == ("environment.yml: relaxme==1.0 (line 3) skipped: requirements.txt names relaxme",)


@pytest.mark.parametrize(
    "files",
    [
        {"environment.yml": "dependencies:\n  - pytorch::pytorch=1.4\n"},  # named directly
        {"requirements.txt": "needs-torch\n"},  # through a dependency: never fetched from the index
    ],
)
def test_torch_without_a_stack_on_this_host_is_ours_to_fix_never_a_download(
    settings: BuilderSettings, index: Server, tmp_path: Path, files: dict[str, str]
) -> None:
    before = len(index.requests)
    with pytest.raises(StackError, match=r"this agent needs torch, .* scripts/build_stack_image.sh"):
        _plan(settings, tmp_path, files)
    assert not [path for path in index.requests[before:] if path.startswith("/files/torch-")]


def _with_stack(settings: BuilderSettings) -> AgentStacks:
    # What installed_stacks reads from a torch stack image's labels (the image is not needed to resolve).
    stack = Stack(
        spec=STACKS["torch"], image="rl-arena-agent-base-torch:1", image_id="", size_bytes=0,
        packages=(("filelock", "4.3.1"), ("torch", "2.13.0+cpu")),
    )  # fmt: skip
    return AgentStacks(stacks=[stack], cache_root=settings.wheel_cache)


def _plan_with_stack(settings: BuilderSettings, tmp_path: Path, requirements: str):
    path = tmp_path / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("player.py", "class Player:\n    pass\n")
        archive.writestr("requirements.txt", requirements)
    wanted = wanted_requirements(validate_zip(path), python=TARGET.python)
    return resolve_wanted(wanted, TARGET, settings, _with_stack(settings))


def test_a_dependency_that_needs_torch_is_met_by_the_stack_and_only_the_rest_is_installed(
    settings: BuilderSettings, index: Server, tmp_path: Path
) -> None:
    before = len(index.requests)
    plan = _plan_with_stack(settings, tmp_path, "needs-torch\n")
    assert plan.stack is not None and plan.stack.describe() == "torch 2.13.0+cpu"
    assert plan.resolution.packages() == [("needs-torch", "1.0")]  # the stub of torch is not installed
    assert not [path for path in index.requests[before:] if path.startswith("/files/torch-")]
    plan = _plan_with_stack(settings, tmp_path, "torch>=2\nrelaxme==2.1.0\n")
    assert plan.stack is not None and plan.resolution.packages() == [("relaxme", "2.1.0")]


def test_a_torch_pin_the_stack_does_not_meet_is_refused_naming_both_versions(
    settings: BuilderSettings, tmp_path: Path
) -> None:
    with pytest.raises(RequirementsError) as caught:
        _plan_with_stack(settings, tmp_path, "torch>=3\n")
    assert str(caught.value).startswith(
        "requirements.txt: torch>=3 cannot be met: this server gives every agent torch 2.13.0+cpu from its "
        "shared PyTorch (CPU) stack"
    )
