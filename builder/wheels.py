"""A Python agent's ``requirements.txt``, resolved wheels-only on the worker host into a shared wheel cache.

Nothing of the submission runs at build time: requirements are fetched as wheels only (``pip download
--only-binary=:all:`` for the agent base image's exact interpreter and platform tags), so no ``setup.py``
is ever executed. Each wheel's central directory is checked here against the packages' caps before any
build copies it (``check_wheels``: bytes, files, compression ratio, paths); the build container then
unpacks exactly those wheel files, without network, with our counting unpacker
(``image_files/install_wheels.py``, ``builder.image``). A requirement that exists only as a source
distribution is refused, naming it.

``requirements.txt`` may hold requirement lines only (``name[extras] <specifiers> ; <markers>``): options
(``--index-url``, ``-r``, ``-e``...), URLs and paths are refused, so a submission cannot point the host's
pip at any other server. Where wheels come from is the operator's choice (``AGENT_PIP_INDEX_URL``,
``AGENT_PIP_EXTRA_INDEX_URL``).

Cache layout under ``BuilderSettings.wheel_cache`` (shared by every build on the host, safe for concurrent
builders: files appear by atomic rename)::

    sha256/<hex>/<wheel file name>     each wheel, addressed by its content
    resolutions/<key>.json             what one (requirements, platform, indexes) resolved to
    platforms/<image id>.json          the tags of one base image (probed once)

A resolution is reused as long as its wheels are in the cache, so an unpinned requirement keeps the
versions it first resolved to on this host (builds are reproducible); a new base image or index resolves
again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from agent_uploads.requirements import RequirementsError
from agent_uploads.zip_directory import DirectoryError, directory_entries
from builder.settings import BuilderSettings

RESOLVER_VERSION = "1"
#: A file of a wheel over WHEEL_RATIO_FLOOR_BYTES may not inflate more than MAX_WHEEL_RATIO to 1 (deflate
#: tops out near 1032:1; real wheels' shared libraries and data stay far below 200:1).
MAX_WHEEL_RATIO = 200
WHEEL_RATIO_FLOOR_BYTES = 1 << 20
#: A wheel's file names and its central directory (which the unpacker in the build holds in memory); the
#: largest real wheels have directories of a few MiB and names of a few hundred bytes.
MAX_WHEEL_NAME_BYTES = 1024
MAX_WHEEL_DIRECTORY_BYTES = 64 * 1024 * 1024
#: Resolutions used this recently are never trimmed (a build may be copying their wheels).
TRIM_GRACE_S = 3600.0
_NO_WHEEL = re.compile(r"No matching distribution found for ([^\s]+)")
_FROM_VERSIONS = re.compile(r"satisfies the requirement (\S+).*?\(from versions: ([^)]*)\)")
_NETWORK = re.compile(
    r"Retrying \(Retry\(|Could not fetch URL|NewConnectionError|Max retries exceeded|ProxyError|SSLError|"
    r"ConnectTimeout|ReadTimeout|Temporary failure in name resolution|HTTP error 5\d\d"
)
#: Prints the base image's interpreter and the wheel tags it accepts (run inside the image, pip vendored).
PLATFORM_PROBE = (
    "import json, sys\n"
    "from pip._vendor.packaging import tags\n"
    "supported = list(tags.sys_tags())\n"
    "print(json.dumps({'python': '%d.%d' % sys.version_info[:2],"
    " 'implementation': tags.interpreter_name(),"
    " 'abis': sorted({t.abi for t in supported}),"
    " 'platforms': list(dict.fromkeys(t.platform for t in supported))}))\n"
)


class NoWheelError(RequirementsError):
    """No wheel of ``requirement`` suits the platform; ``versions`` are those the index has for it (pip's
    "from versions: ..."), so a caller may relax a pin to one of them."""

    def __init__(self, message: str, *, requirement: str, versions: tuple[str, ...]) -> None:
        super().__init__(message)
        self.requirement = requirement
        self.versions = versions


class ConflictError(RequirementsError):
    """pip found the requirements impossible together; ``output`` is all pip said."""

    def __init__(self, message: str, *, output: str) -> None:
        super().__init__(message)
        self.output = output


class WheelCacheError(Exception):
    """Fetching wheels failed on our side (index unreachable, disk, timeout): retry later."""


@dataclass(frozen=True)
class TargetPlatform:
    """What the agent base image's interpreter accepts, as ``pip download`` options."""

    python: str  # "3.11"
    implementation: str  # "cp"
    abis: tuple[str, ...]
    platforms: tuple[str, ...]

    def pip_options(self) -> list[str]:
        options = ["--python-version", self.python, "--implementation", self.implementation]
        for abi in self.abis:
            options += ["--abi", abi]
        for platform in self.platforms:
            options += ["--platform", platform]
        return options

    def describe(self) -> str:
        arch = next((p.rsplit("_", 1)[-1] for p in self.platforms if p.startswith("manylinux")), "?")
        if arch == "64":
            arch = "x86_64"
        return f"Python {self.python}, Linux {arch}"


@dataclass(frozen=True)
class Wheel:
    """One wheel of a resolution."""

    filename: str
    sha256: str
    size: int
    name: str
    version: str


@dataclass(frozen=True)
class Resolution:
    """The wheels one requirements file resolved to."""

    wheels: tuple[Wheel, ...]
    cached: bool
    seconds: float

    @property
    def total_bytes(self) -> int:
        return sum(w.size for w in self.wheels)

    def packages(self) -> list[tuple[str, str]]:
        """(name, version) of every package, sorted by name."""
        return sorted((w.name, w.version) for w in self.wheels)


def _describe(path: Path) -> str:
    try:
        name, version, _build, _tags = parse_wheel_filename(path.name)
    except InvalidWheelFilename:
        return f"the file {path.name}"
    return f"the wheel of {name} {version} ({path.name})"


def check_wheels(paths: list[Path], settings: BuilderSettings) -> None:
    """Refuse, before any build copies them, wheels whose central directories (read in bounded chunks,
    nothing inflated) declare more than the packages' caps together: ``AGENT_PACKAGES_MAX_MB`` of
    uncompressed bytes, ``AGENT_PACKAGES_MAX_FILES`` files, a file or a whole wheel inflating more than
    ``MAX_WHEEL_RATIO`` to 1 past ``WHEEL_RATIO_FLOOR_BYTES`` (a compression bomb, also one spread over
    many small files), or a path that leaves the install folder. ``RequirementsError`` names the
    package. Declared sizes can lie: the in-build unpacker (``image_files/install_wheels.py``) counts the
    bytes it really writes against the same caps."""
    max_bytes = settings.packages_max_mb * 1024 * 1024
    max_files = settings.packages_max_files
    total_bytes = total_files = 0
    for path in paths:
        shown = _describe(path)
        size = path.stat().st_size
        wheel_bytes = 0
        try:
            with path.open("rb") as handle:
                declared, directory_bytes, entries = directory_entries(handle, size)
                if directory_bytes > MAX_WHEEL_DIRECTORY_BYTES:
                    raise RequirementsError(
                        f"requirements.txt: {shown} has a {directory_bytes / 2**20:.0f} MiB directory, over "
                        f"this server's limit of {MAX_WHEEL_DIRECTORY_BYTES // 2**20} MiB"
                    )
                if total_files + declared > max_files:
                    raise RequirementsError(
                        f"requirements.txt: {shown} holds {declared} files, which brings the packages to "
                        f"{total_files + declared} files, over this server's limit of {max_files}"
                    )
                for entry in entries:
                    total_files += 1
                    total_bytes += entry.file_size
                    wheel_bytes += entry.file_size
                    name = entry.name
                    if len(name.encode("utf-8", "surrogateescape")) > MAX_WHEEL_NAME_BYTES:
                        raise RequirementsError(
                            f"requirements.txt: {shown} holds a file name over {MAX_WHEEL_NAME_BYTES} bytes "
                            f"({name[:80]!r}...)"
                        )
                    if name.startswith("/") or ".." in name.split("/") or "\\" in name:
                        raise RequirementsError(
                            f"requirements.txt: {shown} holds the unsafe path {name[:200]!r}"
                        )
                    if (
                        entry.file_size > WHEEL_RATIO_FLOOR_BYTES
                        and entry.file_size > max(entry.compressed_size, 1) * MAX_WHEEL_RATIO
                    ):
                        raise RequirementsError(
                            f"requirements.txt: {shown} is refused as a compression bomb: its file "
                            f"{name[:200]!r} inflates {entry.file_size / 2**20:.0f} MiB from "
                            f"{entry.compressed_size} bytes (over {MAX_WHEEL_RATIO} to 1)"
                        )
                    if wheel_bytes > WHEEL_RATIO_FLOOR_BYTES and wheel_bytes > max(size, 1) * MAX_WHEEL_RATIO:
                        raise RequirementsError(
                            f"requirements.txt: {shown} is refused as a compression bomb: its files inflate "
                            f"to more than {wheel_bytes / 2**20:.0f} MiB from a {size}-byte wheel (over "
                            f"{MAX_WHEEL_RATIO} to 1)"
                        )
                    if total_files > max_files:
                        raise RequirementsError(
                            f"requirements.txt: {shown} brings the packages to over {max_files} files, "
                            f"over this server's limit of {max_files}"
                        )
                    if total_bytes > max_bytes:
                        raise RequirementsError(
                            f"requirements.txt: {shown} brings the installed packages to more than "
                            f"{settings.packages_max_mb} MiB (at least {total_bytes / 2**20:.0f} MiB), over "
                            f"this server's limit of {settings.packages_max_mb} MiB"
                        )
        except DirectoryError as exc:
            raise RequirementsError(f"requirements.txt: {shown} is not a valid wheel: {exc}") from None


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


class WheelCache:
    """The shared, content-addressed wheel cache of this host."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def wheel_path(self, wheel: Wheel) -> Path:
        return self.root / "sha256" / wheel.sha256 / wheel.filename

    # -- the base image's platform -------------------------------------------------------------------
    def platform(self, image_id: str, probe) -> TargetPlatform:
        """The tags of base image ``image_id``; ``probe()`` runs ``PLATFORM_PROBE`` in it (returns its
        output) and is called only the first time."""
        path = self.root / "platforms" / f"{image_id.replace(':', '-')}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = json.loads(probe())
            _write_atomic(path, json.dumps(data))
        return TargetPlatform(
            python=data["python"],
            implementation=data["implementation"],
            abis=tuple(data["abis"]),
            platforms=tuple(data["platforms"]),
        )

    # -- resolving -----------------------------------------------------------------------------------
    def resolve(
        self,
        requirements: list[str],
        target: TargetPlatform,
        settings: BuilderSettings,
        *,
        find_links: tuple[str, ...] = (),
        constraints: tuple[str, ...] = (),
    ) -> Resolution:
        """The wheels ``requirements`` need on ``target``: from an earlier resolution when its wheels are
        all here, else fetched with ``pip download --only-binary=:all:`` from the configured indexes (and
        the local ``find_links`` folders, under pip ``constraints``: ``builder.stacks`` uses them)."""
        started = time.monotonic()
        keyed: dict = {
            "v": RESOLVER_VERSION,
            "requirements": requirements,
            "target": asdict(target),
            "index": settings.pip_index_url,
            "extra": settings.pip_extra_index_url,
        }
        if find_links or constraints:
            keyed.update(find_links=list(find_links), constraints=list(constraints))
        key = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()
        manifest = self.root / "resolutions" / f"{key}.json"
        try:
            wheels = tuple(Wheel(**item) for item in json.loads(manifest.read_text()))
            if all(self.wheel_path(w).is_file() for w in wheels):
                os.utime(manifest)  # its last use: trim keeps recently used resolutions
                # Checked again at every use: the operator's caps may have changed since.
                check_wheels([self.wheel_path(w) for w in wheels], settings)
                return Resolution(wheels=wheels, cached=True, seconds=time.monotonic() - started)
        except (OSError, ValueError, TypeError):
            pass
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.root / "tmp") as tmp:
            folder = Path(tmp)
            self._download(requirements, target, settings, folder, find_links, constraints)
            check_wheels(sorted((folder / "wheels").iterdir()), settings)
            wheels = self._store(folder, settings)
        _write_atomic(manifest, json.dumps([asdict(w) for w in wheels], indent=1))
        with contextlib.suppress(OSError):  # trimming is housekeeping: never fails a build
            self.trim(settings.wheel_cache_mb * 1024 * 1024)
        return Resolution(wheels=wheels, cached=False, seconds=time.monotonic() - started)

    def trim(self, budget_bytes: int, *, grace_s: float = TRIM_GRACE_S) -> int:
        """Forget the least recently used resolutions, and delete the wheels no remaining resolution uses,
        until the wheels take at most ``budget_bytes``; resolutions used in the last ``grace_s`` seconds
        are kept whatever the size (a build may be copying their wheels). Returns the bytes deleted."""
        manifests = sorted((self.root / "resolutions").glob("*.json"), key=_mtime)
        wheels = {p: _size(p) for p in (self.root / "sha256").glob("*/*")}
        total = before = sum(wheels.values())
        if total <= budget_bytes:
            return 0
        now = time.time()
        # A wheel stored in the last grace_s seconds may belong to a resolution not written yet.
        recent = {p for p in wheels if now - _mtime(p) < grace_s}
        kept = list(manifests)
        for manifest in manifests:
            if total <= budget_bytes or now - _mtime(manifest) < grace_s:
                break
            kept.remove(manifest)
            manifest.unlink(missing_ok=True)
            used = set()
            for other in kept:
                try:
                    used |= {self.wheel_path(Wheel(**w)) for w in json.loads(other.read_text())}
                except (OSError, ValueError, TypeError):
                    continue
            for path in [p for p in wheels if p not in used and p not in recent]:
                path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    path.parent.rmdir()
                total -= wheels.pop(path)
        return before - total

    def _download(
        self,
        requirements: list[str],
        target: TargetPlatform,
        settings: BuilderSettings,
        folder: Path,
        find_links: tuple[str, ...] = (),
        constraints: tuple[str, ...] = (),
    ) -> None:
        if importlib.util.find_spec("pip") is None:
            raise WheelCacheError(f"pip is not installed in the worker's Python ({sys.executable})")
        dest = folder / "wheels"
        dest.mkdir()
        (folder / "requirements.txt").write_text("\n".join(requirements) + "\n")
        local: list[str] = []
        for link in find_links:
            local += ["--find-links", link]
        if constraints:
            (folder / "constraints.txt").write_text("\n".join(constraints) + "\n")
            local += ["-c", str(folder / "constraints.txt")]
        max_bytes = settings.packages_max_mb * 1024 * 1024
        # pip runs under a file-size limit (no single download can fill the disk), isolated from any pip
        # configuration of the host, with our normalised requirements file (never the submission's).
        wrapper = (
            "import os, resource, sys; "
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({max_bytes}, {max_bytes})); "
            "os.execv(sys.executable, [sys.executable, '-m', 'pip', *sys.argv[1:]])"
        )
        command = [
            sys.executable,
            "-c",
            wrapper,
            "download",
            "--isolated",
            "--no-input",
            "--disable-pip-version-check",
            "--no-cache-dir",
            "--progress-bar",
            "off",
            "--retries",
            "2",  # an index that does not answer is ours to retry later (the build job backs off)
            "--only-binary=:all:",
            "--dest",
            str(dest),
            "--index-url",
            settings.pip_index_url,
            *(["--extra-index-url", settings.pip_extra_index_url] if settings.pip_extra_index_url else []),
            *target.pip_options(),
            *local,
            "-r",
            str(folder / "requirements.txt"),
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["HOME"] = str(folder)
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=settings.packages_timeout_s,
                env=env,
                cwd=folder,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise WheelCacheError(
                f"fetching the requirements' wheels took longer than {settings.packages_timeout_s} s"
            ) from exc
        if done.returncode == 0:
            return
        output = done.stdout + done.stderr
        if done.returncode == -signal.SIGXFSZ:
            raise RequirementsError(
                f"a wheel of these requirements is larger than this server's limit of "
                f"{settings.packages_max_mb} MiB"
            )
        if _NETWORK.search(output):
            raise WheelCacheError(f"the package index could not be reached: {_tail(output)}")
        missing = _NO_WHEEL.search(output)
        if missing and not project_exists(missing.group(1), settings):
            raise RequirementsError(
                f"requirements.txt: no such package: {_project(missing.group(1))} (this server's package "
                "index has no project of that name: check its spelling)"
            )
        if missing:
            listed = _FROM_VERSIONS.search(output)
            versions = listed.group(2).split(", ") if listed and listed.group(2).strip() != "none" else []
            raise NoWheelError(
                f"requirements.txt: no wheel of '{missing.group(1)}' for this server's platform "
                f"({target.describe()}) on its package index. Only wheels are installed: a package "
                "published only as source (sdist) would have to run its own code to build, which the "
                "builder never does. Pick a version that has a wheel, or vendor pure-Python code in your zip",
                requirement=missing.group(1),
                versions=tuple(v.strip() for v in versions if v.strip()),
            )
        if "ResolutionImpossible" in output or "conflict" in output.lower():
            raise ConflictError(
                f"requirements.txt: the requirements conflict: {_tail(output)}", output=output
            )
        raise WheelCacheError(f"pip download failed (exit {done.returncode}): {_tail(output)}")

    def _store(self, folder: Path, settings: BuilderSettings) -> tuple[Wheel, ...]:
        wheels = []
        files = sorted((folder / "wheels").iterdir())
        total = sum(f.stat().st_size for f in files)
        if total > settings.packages_max_mb * 1024 * 1024:
            raise RequirementsError(
                f"the requirements' wheels take {total / 2**20:.0f} MiB, over this server's limit of "
                f"{settings.packages_max_mb} MiB"
            )
        for path in files:
            try:
                name, version, _build, _tags = parse_wheel_filename(path.name)
            except InvalidWheelFilename as exc:
                raise WheelCacheError(f"pip fetched {path.name}, which is not a wheel") from exc
            wheel = Wheel(
                filename=path.name,
                sha256=_sha256(path),
                size=path.stat().st_size,
                name=str(name),
                version=str(version),
            )
            target = self.wheel_path(wheel)
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)  # the download folder is on the cache's file system: atomic
            wheels.append(wheel)
        return tuple(wheels)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _project(requirement: str) -> str:
    """The project name of a requirement as pip printed it (``Foo==1.0`` -> ``Foo``)."""
    try:
        return Requirement(requirement).name
    except InvalidRequirement:
        return re.split(r"[\s=<>!~;\[]", requirement, maxsplit=1)[0]


def project_exists(requirement: str, settings: BuilderSettings, timeout: float = 15.0) -> bool:
    """Whether the operator's package index (or its extra index) has a project of that name (PEP 503:
    ``<index>/<normalised name>/`` answers 200, a missing project 404). Only a 404 from every index is a
    no: an index that cannot be asked counts as yes, so the caller keeps its other explanation."""
    import urllib.error
    import urllib.request

    from packaging.utils import canonicalize_name

    name = canonicalize_name(_project(requirement))
    for index in filter(None, (settings.pip_index_url, settings.pip_extra_index_url)):
        url = f"{index.rstrip('/')}/{name}/"
        if not url.startswith(("http://", "https://")):
            return True
        try:
            with urllib.request.urlopen(url, timeout=timeout):  # noqa: S310 - the operator's own index
                return True
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                return True
        except (OSError, ValueError):
            return True
    return False


def _tail(output: str, lines: int = 6) -> str:
    kept = [ln.strip() for ln in output.splitlines() if ln.strip()]
    return " | ".join(kept[-lines:])[-1500:]
