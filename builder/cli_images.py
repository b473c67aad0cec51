"""Agents given on the command line as folders or zips, built into Docker images for ``--sandbox docker``.

``python -m builder.cli_images --env GAME --player-1 A --player-2 B [options]`` is ``python -m run_duel``
(same options, ``--sandbox docker`` implied) that first builds each agent given as a folder holding
``player.py`` or as a submission zip into an image (``build_submission``, the docker backend; a folder is
zipped first, leaving out caches and VCS folders). Image names pass through unchanged. The referee
(``run_duel``) sits below the builder, so it takes image names only; this module is the step from a folder
to an image.
"""

from __future__ import annotations

import sys
import tempfile
import zipfile
from pathlib import Path

from builder import build_submission
from run_duel.api import SandboxError, get_docker_client, has_agent_entry, parse_digest_ref, run_cli

_SKIPPED_PARTS = {"__pycache__", ".git", ".venv", ".mypy_cache", ".pytest_cache"}


def zip_folder(folder: Path, dest: Path) -> Path:
    """Zip a submission folder, leaving out caches and VCS folders (they would change the content hash)."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for item in sorted(folder.rglob("*")):
            relative = item.relative_to(folder)
            if _SKIPPED_PARTS & set(relative.parts) or item.suffix == ".pyc" or not item.is_file():
                continue
            if item.is_symlink():
                continue  # the builder refuses links; a folder on disk may hold some
            archive.write(item, relative.as_posix())
    return dest


def resolve_docker_agent(ref: str, *, work_dir: Path | None = None) -> str:
    """Turn a command-line agent reference into an image name.

    ``ref`` may be an image name (``repo@sha256:...`` included), a submission zip, or a folder holding
    ``player.py`` (zipped and built on the fly). Raises ``SandboxError`` with the build error when the
    build fails.
    """
    from docker.errors import ImageNotFound

    path = Path(ref)
    if not path.exists():
        if parse_digest_ref(ref):
            return ref  # a registry image: the sandbox pulls it at launch if this engine lacks it
        try:
            get_docker_client().api.inspect_image(ref)
        except ImageNotFound as exc:
            raise SandboxError(f"{ref!r} is neither an image, a zip nor a folder with player.py") from exc
        return ref
    work = Path(work_dir) if work_dir else Path(tempfile.gettempdir()) / "rl-arena-builds"
    if path.is_dir():
        if not has_agent_entry(path):
            raise SandboxError(f"{ref}: the folder has no player.py (or Kaggle-style main.py)")
        with tempfile.TemporaryDirectory() as tmp:
            archive = zip_folder(path, Path(tmp) / "submission.zip")
            result = build_submission(archive, backend="docker", work_dir=work)
    else:
        result = build_submission(path, backend="docker", work_dir=work)
    if not result.ok:
        raise SandboxError(f"building {ref} failed ({result.error_kind}): {result.error}")
    return result.agent_ref


def main(argv: list[str] | None = None) -> int:
    """``python -m run_duel --sandbox docker`` with folders and zips built into images first."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--sandbox" in args or any(arg.startswith("--sandbox=") for arg in args):
        print("builder.cli_images: error: --sandbox is always docker here", file=sys.stderr)
        return 2
    return run_cli(
        ["--sandbox", "docker", *args],
        image_for_path=resolve_docker_agent,
        prog="python -m builder.cli_images",
    )


if __name__ == "__main__":
    sys.exit(main())
