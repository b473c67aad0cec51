"""Nothing of the build host reaches a C++ agent's author (issue 27).

Docker bind-mounts into every build step a copy of the host's ``/etc/resolv.conf`` (even with
``network_mode=none``: the host's resolver addresses) and its own ``/etc/hosts`` and ``/etc/hostname``. A
source could ``#include`` them (g++ then quotes their lines in its diagnostics, which the author reads) or
embed them with ``asm(".incbin ...")`` and print them when it plays. A probe build step shows what Docker
injects on this host; the agent's compile output and its program must hold none of it.
"""

from __future__ import annotations

import io
import tarfile
import uuid
import zipfile
from pathlib import Path

import pytest

from builder import build_submission
from builder.engine import ImageBuildError, run_build
from builder.settings import BuilderSettings
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker

INJECTED = ("/etc/resolv.conf", "/etc/hosts", "/etc/hostname")


@pytest.fixture(scope="module")
def injected(base_image: str) -> dict[str, list[str]]:
    """What a build step of ours sees in the files Docker injects (a plain RUN, network none): path -> its
    non-empty lines."""
    settings = BuilderSettings()
    command = "; ".join(f"echo '=={path}'; cat {path}" for path in INJECTED) + "; exit 3"
    dockerfile = f"FROM {settings.cpp_base_image}\nRUN {command}\n"
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile.encode())
        tar.addfile(info, io.BytesIO(dockerfile.encode()))
    context.seek(0)
    with pytest.raises(ImageBuildError) as raised:  # exit 3: nothing is kept
        run_build(context, f"rl-arena-test-probe:{uuid.uuid4().hex[:8]}", settings)
    seen: dict[str, list[str]] = {}
    current = None
    for line in raised.value.log.splitlines():
        if line.startswith("==/etc/"):
            current = line[2:]
            seen[current] = []
        elif current and line.strip() and not line.startswith((" ---> ", "Step ", "Removing ")):
            seen[current].append(line.strip())
    nameservers = [ln for ln in seen.get("/etc/resolv.conf", []) if ln.startswith("nameserver")]
    assert nameservers, f"the probe saw no resolver in the build step: {raised.value.log[-2000:]}"
    return seen


def _zip(tmp_path: Path, source: str) -> Path:
    path = tmp_path / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("main.cpp", f"// {uuid.uuid4()}\n{source}")
    return path


def _host_lines(injected: dict[str, list[str]]) -> list[str]:
    """The lines of the host's resolver configuration as a build step sees them, and their addresses."""
    lines = [ln for ln in injected["/etc/resolv.conf"] if not ln.startswith("#")]
    return lines + [ln.split()[1] for ln in lines if ln.startswith("nameserver") and len(ln.split()) > 1]


def test_including_the_injected_files_shows_nothing_of_the_host(
    injected: dict[str, list[str]], tmp_path: Path
) -> None:
    source = "".join(f'#include "{path}"\n' for path in (*INJECTED, "/proc/self/mountinfo"))
    source += "int main() { return 0; }\n"
    result = build_submission(_zip(tmp_path, source), backend="docker", work_dir=tmp_path, registry=None)
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED"), result.log[-3000:]
    shown = result.error + "\n" + result.log
    for line in _host_lines(injected):
        assert line not in shown, f"{line!r} of the build host reached the author:\n{result.error}"
    assert "/var/lib/docker" not in shown  # the host's paths in mountinfo
    assert "is not part of the submission, is not shown" in result.error, result.error


def test_a_program_embedding_the_injected_files_holds_nothing_of_the_host(
    injected: dict[str, list[str]], tmp_path: Path
) -> None:
    """``.incbin`` copies a file into the program at build time; the program prints the copies."""
    blobs = "".join(
        f'asm(".section .rodata\\n.global blob{i}\\nblob{i}:\\n.incbin \\"{path}\\"\\n.byte 0\\n.text\\n");\n'
        f"extern const char blob{i}[];\n"
        for i, path in enumerate(INJECTED)
    )
    source = (
        "#include <cstdio>\n"
        + blobs
        + "int main() {\n"
        + "".join(f'  std::printf("==%s\\n%s\\n", "{p}", blob{i});\n' for i, p in enumerate(INJECTED))
        + "  return 0;\n}\n"
    )
    result = build_submission(_zip(tmp_path, source), backend="docker", work_dir=tmp_path, registry=None)
    assert result.ok, f"{result.error}\n{result.log[-3000:]}"
    try:
        printed = (
            get_client()
            .containers.run(result.agent_ref, network_mode="none", remove=True, stdout=True, stderr=True)
            .decode()
        )
    finally:
        get_client().api.remove_image(result.agent_ref, force=True)
    assert "==/etc/resolv.conf" in printed and "==/etc/hostname" in printed, printed
    for line in _host_lines(injected):
        assert line not in printed, f"{line!r} of the build host was embedded in the program:\n{printed}"
    embedded_hostname = printed.split("==/etc/hostname\n", 1)[1].strip()
    assert embedded_hostname == "agent-build", printed
