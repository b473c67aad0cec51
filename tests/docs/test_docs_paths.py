"""Every ``path/to/file.py`` the documentation names exists.

A moved or deleted module leaves sentences that send a newcomer to a file that is not there; this test
fails on such a sentence. It reads the top-level docs (``README.md``, ``SECURITY.md``, ``docs/*.md``) and
every package's and test folder's Markdown, finds each relative path ending in ``.py`` (at least one
folder deep), and looks for it from the repository's root, from the Markdown file's folder, and from the
light client's folder (``rl_arena_client/...``). Paths outside this repository that are named on purpose
(the original rl-arena's files, another project's) are in ``NOT_OURS``, each with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Paths the docs name on purpose that are not files of this repository.
NOT_OURS = {
    "run_duel/run_match.py": "the original rl-arena's referee (docs/PROTOCOL.md: what its agents were given)",
    "kaggle_environments/envs/connectx/connectx.py": "Kaggle's ConnectX (the negamax example's source)",
}

# A relative path: not preceded by a path or URL character, or a placeholder's end (<game>/, {a,b}/).
PATH = re.compile(r"(?<![\w/.:*}>~-])((?:[\w.*-]+/)+[\w.*-]+\.py)\b")

# A test cited by its pytest id: tests/web/test_web_x.py::test_y, or test_x.py::test_y.
TEST_ID = re.compile(r"((?:tests/[\w/]+/)?test_\w+\.py)::(test_\w+)")
# A bare module name in backticks, and the names of an agent's own files, which are no module of ours.
BARE = re.compile(r"`([\w-]+\.py)`")
AGENT_FILES = {"player.py", "main.py", "submission.py", "sitecustomize.py", "usercustomize.py", "setup.py"}


def markdown_files() -> list[Path]:
    patterns = ("*.md", "docs/*.md", "*/*.md", "*/*/README.md", "tests/*/README.md")
    skip = {".venv", "node_modules", "test-artifacts", "data", "rl_arena.egg-info"}
    found = {path for pattern in patterns for path in ROOT.glob(pattern)}
    kept = [path for path in found if not skip & set(path.relative_to(ROOT).parts)]
    # The light client's run_duel/, environments/... are symlinks: read each file once, where it lives.
    return sorted(path for path in kept if path.resolve() == path.absolute())


def exists(path: str, markdown: Path) -> bool:
    bases = (ROOT, markdown.parent, ROOT / "client")
    return any(any(base.glob(path)) if "*" in path else (base / path).exists() for base in bases)


def test_the_docs_name_only_files_that_exist() -> None:
    missing = []
    for markdown in markdown_files():
        for number, line in enumerate(markdown.read_text(encoding="utf-8").splitlines(), start=1):
            for path in PATH.findall(line):
                if path not in NOT_OURS and not exists(path, markdown):
                    missing.append(f"{markdown.relative_to(ROOT)}:{number}: {path}")
    assert not missing, "the docs name files that do not exist:\n" + "\n".join(missing)


def test_the_docs_name_only_tests_that_exist() -> None:
    """A ``test_file.py::test_name`` the docs cite as the proof of a guarantee is a test of that file."""
    missing = []
    for markdown in markdown_files():
        for number, line in enumerate(markdown.read_text(encoding="utf-8").splitlines(), start=1):
            for path, name in TEST_ID.findall(line):
                files = [ROOT / path] if "/" in path else list((ROOT / "tests").rglob(path))
                if not any(f.exists() and re.search(rf"def {name}\b", f.read_text()) for f in files):
                    missing.append(f"{markdown.relative_to(ROOT)}:{number}: {path}::{name}")
    assert not missing, "the docs cite tests that do not exist:\n" + "\n".join(missing)


def test_a_package_readme_names_only_its_own_modules() -> None:
    """A bare ``module.py`` in backticks in a package's README is a file of that package (or a test's)."""
    missing = []
    for markdown in ROOT.glob("*/README.md"):
        package = markdown.parent
        for number, line in enumerate(markdown.read_text(encoding="utf-8").splitlines(), start=1):
            for name in BARE.findall(line):
                homes = (package, ROOT / "tests", ROOT / "benchmarks")  # or the test or benchmark it names
                if name not in AGENT_FILES and not any(any(home.rglob(name)) for home in homes):
                    missing.append(f"{markdown.relative_to(ROOT)}:{number}: {name}")
    assert not missing, "package READMEs name modules the package does not have:\n" + "\n".join(missing)


def test_the_scan_reads_the_package_readmes_and_finds_paths() -> None:
    files = {str(path.relative_to(ROOT)) for path in markdown_files()}
    assert {"README.md", "core/README.md", "run_duel/README.md", "docs/DEPLOYMENT.md"} <= files
    line = "see `core/rating_outbox.py`, https://example.org/a/b.py and /opt/arena/c.py"
    assert PATH.findall(line) == ["core/rating_outbox.py"]


def test_every_path_not_ours_is_still_named_somewhere() -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in markdown_files())
    assert [path for path in NOT_OURS if path not in text] == []
