"""Our Dockerfile templates and the build context: the only Dockerfiles ever used (users cannot supply one).

Image layout (every language)::

    /opt/arena/...                 our harness, copied from run_duel/harness/ (Python, C++ header, Node.js)
    /agent/...                     the user's files, owned by root, read-only for the agent
    USER 10001                     never root at run time

Python: an optional first stage installs the resolved wheels as user 10001 without network or index
(``image_files/install_packages.sh``); the final image copies them root-owned to ``/opt/agent-packages``.
C++: every .cpp is compiled at build time, as user 10001, against ``/opt/arena/arena.hpp``; the entrypoint,
``launch_when_ready.sh``, execs the program once the referee's socket exists. JavaScript: ``node --check``
parses (never runs) ``main.js``. The context tar streams the agent's files from the validated zip and the
wheels from the host's cache; ``build_key`` hashes everything that decides the image's content.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from pathlib import Path

from agent_uploads.zip_validation import ValidatedZip, read_member_capped
from builder.settings import BuilderSettings
from builder.wheels import Resolution
from run_duel.api import HARNESS_DIR, HARNESS_PYTHON_FLAGS, PYTHON_HARNESS_FILES

TEMPLATE_VERSION = "4"
AGENT_UID = 10001
IMAGE_FILES = Path(__file__).resolve().parent / "image_files"
PACKAGES_DIR = "/opt/agent-packages"
CPP_PROGRAM = "/opt/agent-bin/agent"
#: Our files copied to /opt/arena/ in each language's image (name in the image -> source).
ARENA_FILES: dict[str, dict[str, Path]] = {
    "python": {
        **{name: HARNESS_DIR / name for name in PYTHON_HARNESS_FILES},  # the script and its modules
        "install_packages.sh": IMAGE_FILES / "install_packages.sh",
        "install_wheels.py": IMAGE_FILES / "install_wheels.py",
    },
    "cpp": {
        "arena.hpp": HARNESS_DIR / "arena.hpp",
        "compile_cpp.sh": IMAGE_FILES / "compile_cpp.sh",
        "launch_when_ready.sh": IMAGE_FILES / "launch_when_ready.sh",
    },
    "javascript": {"arena_harness.js": HARNESS_DIR / "arena_harness.js"},
}
#: Nothing of the agent's runs before its seat is ready: our Python harness starts isolated
#: (``HARNESS_PYTHON_FLAGS``; the packages are not on ``PYTHONPATH``, the harness adds them in the agent's
#: process once connected) and a C++ program starts only once the referee's socket exists, that is once
#: the data folder is filled (``launch_when_ready.sh``).
ENTRYPOINTS: dict[str, list[str]] = {
    "python": ["python3", *HARNESS_PYTHON_FLAGS, "/opt/arena/arena_harness.py", "--agent-dir", "/agent"],
    "cpp": ["/bin/sh", "/opt/arena/launch_when_ready.sh", CPP_PROGRAM],
    "javascript": ["node", "/opt/arena/arena_harness.js", "--agent-dir", "/agent"],
}
ENTRYPOINT = ENTRYPOINTS["python"]


def _final_lines(labels: dict, entrypoint: list[str], env: str) -> list[str]:
    label_args = " ".join(f"{key}={json.dumps(value)}" for key, value in sorted(labels.items()))
    return [
        f"LABEL {label_args}",
        f"ENV {env}",
        f"USER {AGENT_UID}:{AGENT_UID}",
        "WORKDIR /agent",
        "ENTRYPOINT " + json.dumps(entrypoint),
        "CMD []",
    ]


def render_dockerfile(
    base_image: str,
    *,
    labels: dict,
    language: str = "python",
    wheels: bool = False,
    settings: BuilderSettings | None = None,
) -> str:
    """Our Dockerfile for one language: the only one ever used (users cannot supply their own)."""
    settings = settings or BuilderSettings()
    lines: list[str] = []
    env = "HOME=/tmp"
    if language == "python":
        env = "PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp"
        if wheels:
            # Stage 1 installs the fetched wheels as the agent user, without network or index.
            lines += [
                f"FROM {base_image} AS packages",
                "COPY wheels/ /tmp/wheels/",
                "COPY arena/install_packages.sh arena/install_wheels.py /tmp/",
                f"RUN mkdir -m 0755 {PACKAGES_DIR} && chown {AGENT_UID}:{AGENT_UID} {PACKAGES_DIR}",
                f"USER {AGENT_UID}:{AGENT_UID}",
                f"RUN sh /tmp/install_packages.sh {settings.packages_timeout_s} "
                f"{settings.packages_max_mb * 1024 * 1024} {settings.packages_max_files}",
            ]
        lines += [f"FROM {base_image}"]
        if wheels:
            lines += [f"COPY --from=packages --chown=0:0 {PACKAGES_DIR} {PACKAGES_DIR}"]
        lines += [
            "COPY arena/ /opt/arena/",
            "COPY agent/ /agent/",
            # Precompile so a read-only root never makes the agent recompile at every start (non-fatal: a
            # syntax error is reported to the author when the harness imports player.py).
            "RUN (python3 -m compileall -q /agent /opt/arena >/dev/null 2>&1 || true) "
            "&& chmod -R a-w,a+rX /agent /opt/arena",
        ]
    elif language == "cpp":
        lines += [
            f"FROM {base_image}",
            "COPY arena/ /opt/arena/",
            "COPY agent/ /agent/",
            f"RUN chmod -R a-w,a+rX /agent /opt/arena && mkdir -m 0755 /tmp/agent-build "
            f"&& chown {AGENT_UID}:{AGENT_UID} /tmp/agent-build",
            # Started as root: it empties the build step's copies of the host's /etc/resolv.conf, /etc/hosts
            # and /etc/hostname, then compiles as the agent user.
            f"RUN sh /opt/arena/compile_cpp.sh {settings.build_timeout_s} /tmp/agent-build/agent",
            f"RUN install -D -o 0 -g 0 -m 0555 /tmp/agent-build/agent {CPP_PROGRAM} "
            "&& rm -rf /tmp/agent-build",
        ]
    elif language == "javascript":
        lines += [
            f"FROM {base_image}",
            "COPY arena/ /opt/arena/",
            "COPY agent/ /agent/",
            "RUN chmod -R a-w,a+rX /agent /opt/arena",
            # Parse (never run) main.js so a syntax error reaches its author at build time.
            f"USER {AGENT_UID}:{AGENT_UID}",
            "RUN node --check /agent/main.js >/tmp/check.log 2>&1 "
            "|| { sed 's/^/SYNTAX: /' /tmp/check.log; echo 'SYNTAX ERROR'; exit 1; }",
        ]
    else:
        raise ValueError(f"unknown agent language {language!r}")
    return "\n".join([*lines, *_final_lines(labels, ENTRYPOINTS[language], env)]) + "\n"


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    info.mtime = 0
    tar.addfile(info)


def _add_file(tar: tarfile.TarFile, name: str, path: Path) -> None:
    info = tarfile.TarInfo(name)
    info.size = path.stat().st_size
    info.mode = 0o644
    info.mtime = 0
    with path.open("rb") as handle:
        tar.addfile(info, handle)


def write_context(
    validated: ValidatedZip,
    dockerfile: str,
    out,
    *,
    language: str = "python",
    wheel_files: tuple[Path, ...] = (),
) -> None:
    """Write the build context tar to the file object ``out`` (agent files streamed from the zip, wheels
    from the cache)."""
    with tarfile.open(fileobj=out, mode="w") as tar:
        _add_bytes(tar, "Dockerfile", dockerfile.encode())
        _add_dir(tar, "arena")
        for name, source in sorted(ARENA_FILES[language].items()):
            _add_bytes(tar, f"arena/{name}", source.read_bytes())
        if wheel_files:
            _add_dir(tar, "wheels")
            for path in wheel_files:
                _add_file(tar, f"wheels/{path.name}", path)
        _add_dir(tar, "agent")
        made_dirs: set[str] = set()
        budget = validated.limits.max_total_bytes
        with validated.open_zip() as zf:
            for entry in validated.entries:
                parts = entry.path.split("/")
                for i in range(1, len(parts)):
                    folder = "agent/" + "/".join(parts[:i])
                    if folder not in made_dirs:
                        made_dirs.add(folder)
                        _add_dir(tar, folder)
                with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024) as spool:
                    size = read_member_capped(zf, entry, budget, spool.write)
                    budget -= size
                    spool.seek(0)
                    info = tarfile.TarInfo("agent/" + entry.path)
                    info.size = size
                    info.mode = 0o644
                    info.mtime = 1
                    tar.addfile(info, spool)


def build_key(
    validated: ValidatedZip,
    base_image_id: str,
    settings: BuilderSettings,
    *,
    language: str = "python",
    resolution: Resolution | None = None,
) -> str:
    """Everything that determines the image's content, hashed."""
    h = hashlib.sha256()
    parts = [TEMPLATE_VERSION, language, validated.content_hash, base_image_id]
    for name, path in sorted(ARENA_FILES[language].items()):
        parts.append(f"{name}={hashlib.sha256(path.read_bytes()).hexdigest()}")
    if resolution is not None:
        parts += [w.sha256 for w in resolution.wheels]
        parts += [str(settings.packages_max_mb), str(settings.packages_max_files)]
    for part in parts:
        h.update(part.encode() + b"\0")
    return h.hexdigest()
