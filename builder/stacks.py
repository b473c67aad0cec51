"""Shared stacks: big ML libraries installed once per host and registry, not once per agent.

torch (CPU) alone takes about 700 MB installed. Rather than copy it into every agent image (and every
worker's disk, and the registry, once per agent), the operator builds a *stack image* once::

    rl-arena-agent-base:1                  Python 3.11 + numpy + pip (scripts/build_base_image.sh)
      └─ rl-arena-agent-base-torch:1       + torch and its dependencies in /opt/stacks/torch, on the default
                                             sys.path (a .pth file in the interpreter's site-packages)

(``scripts/build_stack_image.sh``, i.e. ``python -m builder.stacks build torch``, from the operator's wheel
source: ``AGENT_STACK_TORCH_WHEEL``, a torch wheel file or a folder of wheels, else
``AGENT_STACK_TORCH_INDEX_URL``, PyTorch's CPU index). An agent whose requirements need torch, directly or
through another package, is built ``FROM`` the stack image and installs only the rest: its image shares the
stack's layers, which a worker pulls once and the registry stores once, like the base image's. What the
owner sees as its image size, and what ``AGENT_PACKAGES_MAX_MB`` caps, is what the agent adds.

How the agent's requirements are resolved with the stack (``AgentStacks``):

* a requirement that names a stack package directly is checked against the stack's version (an
  ``environment.yml`` pin is replaced by it, with a note; a ``requirements.txt`` pin the stack does not
  satisfy is refused, naming both) and taken out of what pip resolves;
* pip resolves the rest with a *stub* wheel of each stack package (metadata only, version
  ``<stack version>.rlarenastack``) on a local ``--find-links`` folder and a constraint pinning it, so a
  dependency that needs torch (``torchvision``, ``stable-baselines3``...) is satisfied by the stack and
  never fetches torch from the index (whose default build is several GB of CUDA libraries). The stubs are
  dropped from the wheels installed; when one was used, the agent is built on the stack.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from agent_uploads.requirements import RequirementsError
from builder.engine import probe_platform
from builder.settings import BuilderSettings
from builder.wheels import Resolution, TargetPlatform, WheelCache, WheelCacheError
from envsettings import env_int, env_str

STACK_RECIPE_VERSION = "1"
STACKS_DIR = "/opt/stacks"
#: Labels of a stack image: its name, its packages ([name, version] pairs, JSON) and its recipe hash.
STACK_LABEL = "rl-arena.stack"
PACKAGES_LABEL = "rl-arena.stack-packages"
RECIPE_LABEL = "rl-arena.stack-recipe"
#: The local-version suffix of a stub wheel: only the stub matches the constraint pip is given.
STUB_MARK = "rlarenastack"


@dataclass(frozen=True)
class StackSpec:
    """One kind of stack: what it installs and where the operator's settings are."""

    name: str
    provides: tuple[str, ...]  # canonical names of the packages agents get from it
    image_setting: str
    default_image: str
    wheel_setting: str
    version_setting: str
    index_setting: str
    default_index: str
    description: str


STACKS: dict[str, StackSpec] = {
    "torch": StackSpec(
        name="torch",
        provides=("torch",),
        image_setting="AGENT_STACK_TORCH_IMAGE",
        default_image="rl-arena-agent-base-torch:1",
        wheel_setting="AGENT_STACK_TORCH_WHEEL",
        version_setting="AGENT_STACK_TORCH_VERSION",
        index_setting="AGENT_STACK_TORCH_INDEX_URL",
        default_index="https://download.pytorch.org/whl/cpu",
        description="PyTorch (CPU)",
    ),
}


def stack_image_name(spec: StackSpec) -> str:
    return env_str(spec.image_setting) or spec.default_image


@dataclass(frozen=True)
class Stack:
    """A stack image present in this host's engine."""

    spec: StackSpec
    image: str  # its name
    image_id: str
    size_bytes: int
    packages: tuple[tuple[str, str], ...]  # (name, version) installed in it

    def version_of(self, name: str) -> str:
        wanted = canonicalize_name(name)
        return next((v for n, v in self.packages if canonicalize_name(n) == wanted), "")

    def describe(self) -> str:
        main = self.spec.provides[0]
        return f"{main} {self.version_of(main)}"


class StackError(Exception):
    """A stack is needed but unusable on this host (the operator's to fix): ``str()`` says what to run."""


def _split_name(name: str) -> tuple[str, str]:
    repository, sep, tag = name.rpartition(":")
    return (repository, tag) if sep and "/" not in tag else (name, "latest")


def _pull(client, name: str) -> bool:
    """Pull stack image ``name`` from its registry (another host built and pushed it); ``False`` when it
    cannot be had. Only a name with a registry part (``host[:port]/...``) is pulled."""
    from docker.errors import DockerException

    from run_duel.api import RegistryConfig, RegistryConfigError

    first = name.split("/", 1)[0]
    if "/" not in name or not ("." in first or ":" in first or first == "localhost"):
        return False
    try:
        registry = RegistryConfig.from_env()
    except RegistryConfigError:
        registry = None
    auth = registry.auth_config() if registry is not None and name.startswith(registry.host) else None
    repository, tag = _split_name(name)
    try:
        client.images.pull(repository, tag=tag, auth_config=auth)
    except DockerException:
        return False
    return True


def installed_stacks(client, *, pull: bool = False) -> list[Stack]:
    """The stack images of this engine (``client``: a docker SDK client), by their settings' names; with
    ``pull``, a missing one whose name has a registry part is pulled first (``build_stack_image.sh --push``
    on the host that built it)."""
    from docker.errors import ImageNotFound

    found = []
    for spec in STACKS.values():
        name = stack_image_name(spec)
        try:
            image = client.images.get(name)
        except ImageNotFound:
            if not (pull and _pull(client, name)):
                continue
            try:
                image = client.images.get(name)
            except ImageNotFound:
                continue
        labels = image.attrs.get("Config", {}).get("Labels") or {}
        if labels.get(STACK_LABEL) != spec.name:
            continue
        try:
            packages = tuple((str(n), str(v)) for n, v in json.loads(labels.get(PACKAGES_LABEL, "[]")))
        except (ValueError, TypeError):
            continue
        found.append(
            Stack(
                spec=spec,
                image=name,
                image_id=image.id,
                size_bytes=int(image.attrs.get("Size") or 0),
                packages=packages,
            )
        )
    return found


def _stub_version(version: str) -> str:
    return f"{version}.{STUB_MARK}" if "+" in version else f"{version}+{STUB_MARK}"


def _stub_wheel(name: str, version: str) -> tuple[str, bytes]:
    """A wheel holding only metadata (no files, no dependencies): what pip needs to resolve against."""
    stub = _stub_version(version)
    dist = f"{name.replace('-', '_')}-{stub}"
    files = {
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {stub}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: rl-arena\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{dist}.dist-info/RECORD,,\n"
    files[f"{dist}.dist-info/RECORD"] = record
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for path, text in files.items():
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            zf.writestr(info, text)
    return f"{dist}-py3-none-any.whl", buffer.getvalue()


@dataclass
class AgentStacks:
    """The stacks a resolution may lean on: stub folder, constraints, and which stubs pip picked."""

    stacks: list[Stack]
    cache_root: Path

    def provider(self, requirement: str) -> Stack | None:
        try:
            name = canonicalize_name(Requirement(requirement).name)
        except InvalidRequirement:
            return None
        return next((s for s in self.stacks if name in s.spec.provides), None)

    @staticmethod
    def spec_for(requirement: str) -> StackSpec | None:
        try:
            name = canonicalize_name(Requirement(requirement).name)
        except InvalidRequirement:
            return None
        return next((s for s in STACKS.values() if name in s.provides), None)

    def missing(self) -> list[StackSpec]:
        """The stacks this host lacks (their packages are constrained to a version nothing has)."""
        present = {s.spec.name for s in self.stacks}
        return [spec for spec in STACKS.values() if spec.name not in present]

    def pip_options(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(find_links, constraints)`` for ``WheelCache.resolve``: stubs of every stack package (a stack
        missing here gets a constraint nothing satisfies, so torch is never fetched from the index)."""
        constraints: list[str] = []
        wheels: list[tuple[str, bytes]] = []
        present = {s.spec.name: s for s in self.stacks}
        for spec in STACKS.values():
            stack = present.get(spec.name)
            for name in spec.provides:
                if stack is None:
                    constraints.append(f"{name}==0+missing.{STUB_MARK}")
                    continue
                version = stack.version_of(name)
                wheels.append(_stub_wheel(name, version))
                constraints.append(f"{name}=={_stub_version(version)}")
        if not wheels:
            return (), tuple(constraints)
        digest = hashlib.sha256(json.dumps(sorted(n for n, _ in wheels)).encode()).hexdigest()[:16]
        folder = self.cache_root / "stack-stubs" / digest
        if not folder.is_dir():
            folder.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=".tmp-"))
            for filename, data in wheels:
                (tmp / filename).write_bytes(data)
            try:
                os.rename(tmp, folder)
            except OSError:  # another build made it meanwhile
                for child in tmp.iterdir():
                    child.unlink()
                tmp.rmdir()
        return (str(folder),), tuple(constraints)

    def split(self, resolution: Resolution) -> tuple[Resolution, Stack | None]:
        """The resolution without its stub wheels, and the stack they stand for (``None``: not used)."""
        kept = tuple(w for w in resolution.wheels if not w.version.endswith(STUB_MARK))
        used = {canonicalize_name(w.name) for w in resolution.wheels if w.version.endswith(STUB_MARK)}
        stack = next((s for s in self.stacks if used & set(s.spec.provides)), None)
        if len(kept) == len(resolution.wheels):
            return resolution, None
        return dataclasses.replace(resolution, wheels=kept), stack


def missing_stack_error(spec: StackSpec) -> StackError:
    return StackError(
        f"this agent needs {spec.provides[0]}, which this server provides from its shared "
        f"{spec.description} stack image {stack_image_name(spec)}; that image is missing on this host "
        "(its operator must run scripts/build_stack_image.sh)"
    )


# -- building a stack image (the operator's command) ----------------------------------------------------


def _stack_settings(settings: BuilderSettings) -> BuilderSettings:
    """The operator's wheels are trusted: generous caps (they only bound a mistake)."""
    return dataclasses.replace(
        settings,
        packages_max_mb=env_int("AGENT_STACK_MAX_MB", 8192, minimum=1),
        packages_max_files=500000,
        packages_timeout_s=max(settings.packages_timeout_s, 1800),
    )


def _pick_wheel(folder: Path, spec: StackSpec, target: TargetPlatform) -> Path | None:
    """The newest wheel of the stack's main package in ``folder`` that ``target`` can install (pinned by
    ``AGENT_STACK_<NAME>_VERSION`` when set)."""
    main = canonicalize_name(spec.provides[0])
    pinned = env_str(spec.version_setting)
    python = "cp" + target.python.replace(".", "")
    best: tuple | None = None
    for path in folder.glob("*.whl"):
        try:
            name, version, _build, tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            continue
        if name != main or (pinned and str(version) != pinned and version.public != pinned):
            continue
        if not any(
            t.interpreter in (python, "py3") and (t.platform == "any" or t.platform in target.platforms)
            for t in tags
        ):
            continue
        if best is None or version > best[0]:
            best = (version, path)
    return best[1] if best else None


def _pip_find_links() -> list[str]:
    """The local folders of pip's find-links setting (``PIP_FIND_LINKS``, then pip's configuration files)."""
    links = env_str("PIP_FIND_LINKS").split()
    try:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        if key.endswith(".find-links"):
            links += value.strip().strip("'\"").split()
    return [link.removeprefix("file://") for link in dict.fromkeys(links)]


def stack_wheel(spec: StackSpec, target: TargetPlatform, settings: BuilderSettings) -> Path:
    """The wheel file the stack installs: ``AGENT_STACK_<NAME>_WHEEL`` (a file, or a folder to pick from),
    else one in a folder of ``PIP_FIND_LINKS`` (the operator's local wheels), else one fetched (without its
    dependencies) from ``AGENT_STACK_<NAME>_INDEX_URL`` alone, PyTorch's CPU index by default: never from
    the general index, whose torch is the multi-GB CUDA build."""
    source = env_str(spec.wheel_setting)
    if source:
        path = Path(source)
        if path.is_file():
            return path
        if path.is_dir():
            found = _pick_wheel(path, spec, target)
            if found is None:
                raise StackError(
                    f"{spec.wheel_setting}={source}: no {spec.provides[0]} wheel for "
                    f"{target.describe()} there"
                )
            return found
        raise StackError(f"{spec.wheel_setting}={source!r} is neither a wheel file nor a folder")
    for link in _pip_find_links():  # the operator's local wheel folders
        found = _pick_wheel(Path(link), spec, target) if Path(link).is_dir() else None
        if found is not None:
            return found
    index = env_str(spec.index_setting) or spec.default_index
    folder = settings.wheel_cache / "stack-sources" / spec.name
    found = _pick_wheel(folder, spec, target) if folder.is_dir() else None
    if found is not None:
        return found
    folder.mkdir(parents=True, exist_ok=True)
    pinned = env_str(spec.version_setting)
    command = [
        sys.executable, "-m", "pip", "download", "--isolated", "--no-input", "--disable-pip-version-check",
        "--no-cache-dir", "--progress-bar", "off", "--no-deps", "--only-binary=:all:", "--index-url", index,
        *target.pip_options(), "--dest", str(folder),
        f"{spec.provides[0]}=={pinned}" if pinned else spec.provides[0],
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=3600)
    found = _pick_wheel(folder, spec, target)
    if done.returncode != 0 or found is None:
        raise StackError(
            f"fetching {spec.provides[0]} from {index} failed: {(done.stdout + done.stderr)[-1500:]}"
        )
    return found


def _dockerfile(spec: StackSpec, base: str, labels: dict[str, str]) -> str:
    folder = f"{STACKS_DIR}/{spec.name}"
    label_args = " ".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items()))
    return "\n".join(
        [
            f"FROM {base} AS install",
            "COPY wheels/ /tmp/wheels/",
            # Precompiled (unchecked hashes: valid whatever the files' times) so no agent ever compiles
            # torch's modules at start-up on its read-only file system.
            "RUN python3 -m pip install --isolated --no-index --no-deps --no-cache-dir --no-compile "
            f"--disable-pip-version-check --no-input --progress-bar off --target {folder} /tmp/wheels/*.whl "
            f"&& (python3 -m compileall -q -j 0 --invalidation-mode unchecked-hash {folder} >/dev/null 2>&1 "
            f"|| true) && chmod -R a-w,a+rX {folder}",
            f"FROM {base}",
            f"COPY --from=install {folder} {folder}",
            "RUN site=$(python3 -c 'import site; print(site.getsitepackages()[0])') && mkdir -p \"$site\" "
            f'&& echo {folder} > "$site/rl-arena-stack-{spec.name}.pth" '
            f"&& python3 -I -c 'import {spec.provides[0]} as m; print(\"stack ok:\", m.__version__)'",
            f"LABEL {label_args}",
            "",
        ]
    )


def build_stack(
    name: str, settings: BuilderSettings | None = None, *, force: bool = False, log=print
) -> Stack:
    """Build (or find up to date) the stack image ``name`` on this host's engine; return it."""
    from docker.errors import ImageNotFound

    from run_duel.api import get_docker_client as get_client

    spec = STACKS[name]
    settings = settings or BuilderSettings.from_env()
    client = get_client()
    try:
        base = client.images.get(settings.base_image)
    except ImageNotFound as exc:
        raise StackError(
            f"the base image {settings.base_image} is missing: run scripts/build_base_image.sh"
        ) from exc
    started = time.monotonic()
    cache = WheelCache(settings.wheel_cache)
    target = cache.platform(base.id, lambda: probe_platform(base.id))
    wheel = stack_wheel(spec, target, settings)
    log(f"build_stack_image: {name}: installing {wheel} and its dependencies")
    # The wheel's own path as the requirement: pip takes exactly that file, its dependencies from the index.
    resolution = cache.resolve([str(wheel)], target, _stack_settings(settings))
    log(
        f"build_stack_image: {name}: {len(resolution.wheels)} wheels, "
        f"{resolution.total_bytes / 2**20:.0f} MiB "
        f"({'cached' if resolution.cached else 'fetched'} in {resolution.seconds:.1f} s): "
        + ", ".join(f"{n} {v}" for n, v in resolution.packages())
    )
    recipe = hashlib.sha256(
        "\0".join([STACK_RECIPE_VERSION, base.id, *(w.sha256 for w in resolution.wheels)]).encode()
    ).hexdigest()[:16]
    image_name = stack_image_name(spec)
    try:
        existing = client.images.get(image_name)
        labels = existing.attrs.get("Config", {}).get("Labels") or {}
        if labels.get(RECIPE_LABEL) == recipe and not force:
            log(f"build_stack_image: {image_name} is up to date (recipe {recipe}); nothing to do")
            return next(s for s in installed_stacks(client) if s.spec.name == name)
    except ImageNotFound:
        pass
    labels = {
        STACK_LABEL: spec.name,
        PACKAGES_LABEL: json.dumps([list(p) for p in resolution.packages()], separators=(",", ":")),
        RECIPE_LABEL: recipe,
        "rl-arena.base": "1",
        "rl-arena.language": "python",
    }
    with tempfile.TemporaryFile() as context:
        with tarfile.open(fileobj=context, mode="w") as tar:
            data = _dockerfile(spec, settings.base_image, labels).encode()
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            for resolved in resolution.wheels:
                tar.add(cache.wheel_path(resolved), arcname=f"wheels/{resolved.filename}")
        context.seek(0)
        output: list[str] = []
        for item in client.api.build(
            fileobj=context, custom_context=True, tag=image_name, rm=True, forcerm=True, pull=False,
            decode=True, network_mode="none",
        ):  # fmt: skip
            if "error" in item:
                raise StackError(f"building {image_name} failed: {item['error']}\n" + "".join(output[-20:]))
            output.append(item.get("stream") or "")
    stack = next(s for s in installed_stacks(client) if s.spec.name == name)
    log(
        f"build_stack_image: built {image_name} ({stack.describe()}, recipe {recipe}) in "
        f"{time.monotonic() - started:.0f} s; {(stack.size_bytes - base.attrs['Size']) / 2**20:.0f} MB over "
        f"{settings.base_image}"
    )
    return stack


def push_stack(stack: Stack) -> str:
    """Push ``stack`` to ``AGENT_REGISTRY`` as ``<registry>/<its repository>:<its tag>``; return that name:
    the ``AGENT_STACK_<NAME>_IMAGE`` of the other build hosts, which pull it when an agent first needs it,
    so every agent image shares the same stack layers in the registry."""
    from docker.errors import DockerException

    from run_duel.api import RegistryConfig, RegistryConfigError
    from run_duel.api import get_docker_client as get_client

    try:
        registry = RegistryConfig.from_env()
    except RegistryConfigError as exc:
        raise StackError(f"bad registry settings: {exc}") from exc
    if registry is None:
        raise StackError("--push needs AGENT_REGISTRY")
    repository, tag = _split_name(stack.image)
    if repository.startswith(registry.host + "/"):
        remote = repository
    else:
        remote = registry.repository(repository.rsplit("/", 1)[-1])
    try:
        api = get_client().api
        api.tag(stack.image_id, remote, tag)
        for item in api.push(remote, tag=tag, stream=True, decode=True, auth_config=registry.auth_config()):
            if item.get("error"):
                raise StackError(f"the registry refused {remote}:{tag}: {item['error']}")
    except DockerException as exc:
        raise StackError(f"pushing {remote}:{tag} failed: {exc}") from exc
    return f"{remote}:{tag}"


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m builder.stacks", description="Build shared stack images")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build (or find up to date) stack images")
    build.add_argument("names", nargs="*", default=sorted(STACKS), help=f"stacks ({', '.join(STACKS)})")
    build.add_argument("--force", action="store_true")
    build.add_argument(
        "--push",
        action="store_true",
        help="also push it to AGENT_REGISTRY, for the other build hosts (their AGENT_STACK_TORCH_IMAGE)",
    )
    args = parser.parse_args(argv)
    for name in args.names:
        if name not in STACKS:
            parser.error(f"unknown stack {name!r} (known: {', '.join(STACKS)})")
        try:
            stack = build_stack(name, force=args.force, log=_log)
            if args.push:
                _log(f"build_stack_image: pushed as {push_stack(stack)}")
        except (StackError, RequirementsError, WheelCacheError) as exc:
            print(f"build_stack_image: ERROR: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
