"""A conda environment.yml, translated into pip requirements (``agent_uploads.conda_env``; no Docker, no
network).

Real files: the original rl-arena project's example players' and its own environment.yml, and its fixture
of a broken one (``rl_arena_environments/``, MIT, licence beside them)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from agent_uploads.conda_env import nearest_version, parse_environment, translate_conda_spec
from agent_uploads.requirements import RequirementsError

RL_ARENA = Path(__file__).resolve().parent / "rl_arena_environments"


@pytest.mark.parametrize("player", ["dummy", "minimax", "random"])
def test_the_rl_arena_example_players_environment_keeps_numpy_and_leaves_out_python_and_pip(
    player: str,
) -> None:
    env = parse_environment((RL_ARENA / player / "environment.yml").read_text(), python="3.11")
    assert env.requirements == ("numpy==1.17.2.*",)
    assert env.origins["numpy==1.17.2.*"] == "numpy=1.17.2 (line 8)"
    assert env.left_out == (
        "python=3.7 (line 6): the arena runs its own Python (3.11)",
        "pip=19.1.1 (line 7): the builder installs wheels itself",
    )


def test_the_rl_arena_project_environment_translates_its_pip_section_and_known_conda_packages() -> None:
    env = parse_environment((RL_ARENA / "project" / "environment.yml").read_text())
    # The pip: section first, as written; then the conda packages that have a wheel under the same name.
    assert env.requirements == (
        "pyyaml==5.1.2",
        "docker-compose==1.24.1",
        "google-cloud-storage==1.21.0",
        "django-storages[google]==1.7.2",
        "python-digitalocean==1.14.0",
        "numpy==1.17.2.*",
    )
    left = "\n".join(env.left_out)
    for name in ("python=3.7", "pip=19.1.1", "django=2.2.5", "psycopg2=2.8.3", "gunicorn=19.9.0"):
        assert name in left
    assert "django=2.2.5 (line 8): no known wheel equivalent (list it under 'pip:'" in left


def test_the_rl_arena_broken_environment_fixture_is_refused_naming_the_file_and_line() -> None:
    with zipfile.ZipFile(RL_ARENA / "invalid_files.zip") as zf:
        text = zf.read("environment.yml").decode()
    assert text.strip() == "some invalid yml right here"
    with pytest.raises(RequirementsError) as caught:
        parse_environment(text)
    assert str(caught.value).startswith("environment.yml line 1: a conda environment file is a mapping")
    assert "some invalid yml right here" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("name: x\ndependencies:\n  - numpy\n  - [unclosed\n", 5, "not valid YAML"),
        ("name: x\ndependencies:\n  - numpy\n\tbad: tab\n", 4, "not valid YAML"),
        ("name: x\ndependencies: numpy\n", 2, "'dependencies:' must be a list"),
        ("dependencies:\n  - numpy\n  - conda:\n    - scipy\n", 3, "unknown dependency section 'conda'"),
        ("dependencies:\n  - pip: torch\n", 2, "'pip:' must be a list"),
        ("dependencies:\n  - pip:\n    - --index-url http://evil\n", 3, "options are not accepted"),
        ("dependencies:\n  - pip:\n    - x @ https://evil/x.whl\n", 3, "direct URLs are not accepted"),
        ("dependencies:\n  - [numpy]\n", 2, "a dependency must be a single line"),
        ("- numpy\n- scipy\n", 1, "a conda environment file is a mapping"),
    ],
)
def test_a_broken_environment_file_names_the_line(text: str, line: int, words: str) -> None:
    with pytest.raises(RequirementsError) as caught:
        parse_environment(text)
    assert str(caught.value).startswith(f"environment.yml line {line}: "), str(caught.value)
    assert words in str(caught.value)


def test_conda_names_and_pins_become_pip_requirements() -> None:
    env = parse_environment(
        "name: rl\nchannels: [pytorch, conda-forge]\ndependencies:\n"
        "  - python=3.7\n  - pytorch::pytorch=1.4\n  - cpuonly\n  - cudatoolkit=10.1\n"
        "  - conda-forge::scikit-learn>=0.21,<0.23\n  - pandas==0.25.1=py37hb3f55d8_0\n"
        "  - scipy 1.3.1 py37_0\n"
        "  - jupyter\n  - pytest\n  - libgcc-ng\n  - some-conda-only-thing=2\n"
        "  - pip:\n    - gym==0.15.3\n    - pandas>=1  # listed twice: pip's wins\n"
    )
    assert env.requirements == (
        "gym==0.15.3",
        "pandas>=1",
        "torch==1.4.*",
        "scikit-learn<0.23,>=0.21",
        "scipy==1.3.1.*",
    )
    left = "\n".join(env.left_out)
    assert "pandas==0.25.1=py37hb3f55d8_0 (line 9): pandas is already listed under pip:" in left
    for gone in ("python=3.7", "cpuonly", "cudatoolkit=10.1", "jupyter", "pytest", "libgcc-ng"):
        assert gone in left
    assert "some-conda-only-thing=2 (line 14): no known wheel equivalent" in left


def test_an_empty_or_dependency_free_environment_asks_for_nothing() -> None:
    assert parse_environment("").requirements == ()
    assert parse_environment("name: player\n").requirements == ()
    assert parse_environment("name: player\ndependencies:\n").requirements == ()


def test_nested_aliases_are_refused_not_expanded() -> None:
    # A "billion laughs" file: lists of aliases of lists. The nodes are walked, never expanded: a dependency
    # that is a list is refused at once.
    text = "a: &a [numpy, numpy]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\ndependencies: *b\n"
    with pytest.raises(RequirementsError, match="line 1: a dependency must be a single line"):
        parse_environment(text)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("numpy=1.17.2", "numpy==1.17.2.*"),
        ("numpy==1.17.2", "numpy==1.17.2"),
        ("numpy=1.17.*", "numpy==1.17.*"),
        ("numpy 1.17.2 py37_0", "numpy==1.17.2.*"),
        ("numpy=1.17.2=py37h_0", "numpy==1.17.2.*"),
        ("pytorch", "torch"),
        ("pytorch-cpu=1.1", "torch==1.1.*"),
        ("py-opencv", "opencv-python-headless"),
        ("numpy 1.17|1.18", "numpy"),  # an alternative we do not translate: unpinned
    ],
)
def test_translate_conda_spec(spec: str, expected: str) -> None:
    assert translate_conda_spec(spec) == (expected, "")


@pytest.mark.parametrize(
    ("requirement", "available", "expected"),
    [
        # numpy 1.16 never had a wheel for Python 3.11; its first are 1.23.x: the newest of that series.
        ("numpy==1.16.*", ["1.23.2", "1.23.5", "1.24.4", "1.26.4", "2.0.0rc1", "2.0.2"], "1.23.5"),
        ("numpy==1.17.2.*", ["1.23.2", "1.23.5", "1.24.4"], "1.23.5"),
        ("torch==1.4.*", ["2.13.0+cpu"], "2.13.0+cpu"),
        ("numpy==3.0.*", ["1.26.4", "2.2.6"], "2.2.6"),  # a pin from the future: the newest there is
        ("numpy", ["1.26.4", "2.2.6", "2.3.0rc1"], "2.2.6"),
        ("numpy==1.16", [], None),
    ],
)
def test_nearest_version(requirement: str, available: list[str], expected: str | None) -> None:
    assert nearest_version(requirement, available) == expected
