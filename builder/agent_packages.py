"""What a Python agent installs: ``requirements.txt`` and a conda ``environment.yml`` together, resolved
into wheels (``builder.wheels``), with shared stacks (``builder.stacks``) standing in for torch.

``plan_packages`` returns a ``PackagePlan``: the wheels to install in the agent's own folder, the stack image
to build FROM (``None``: the base image), and notes for the build log and the revision page (a conda pin
relaxed to the nearest version that has a wheel, entries of environment.yml left out, the stack used).

Order of precedence: ``requirements.txt`` lines are kept as written (a pin with no wheel is refused, as
always); ``environment.yml`` lines follow (a package already named in requirements.txt is skipped, with a
note), and their pins may be relaxed: the file was written for conda and often for an older Python.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import asdict, dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from agent_uploads.conda_env import (
    ENVIRONMENT_FILE,
    MAX_ENVIRONMENT_BYTES,
    nearest_version,
    parse_environment,
)
from agent_uploads.requirements import (
    MAX_REQUIREMENTS_BYTES,
    REQUIREMENTS_FILE,
    RequirementsError,
    parse_requirements,
    read_package_file,
)
from agent_uploads.zip_validation import ValidatedZip
from builder.settings import BuilderSettings
from builder.stacks import STUB_MARK, AgentStacks, Stack, StackError, missing_stack_error
from builder.wheels import (
    ConflictError,
    NoWheelError,
    Resolution,
    TargetPlatform,
    WheelCache,
    _write_atomic,
)

RELAXER_VERSION = "2"  # 2: the memo keeps the pins, notes are written from each file's own lines


@dataclass(frozen=True)
class PackagePlan:
    """What to install: ``resolution`` (``None``: nothing) FROM ``stack`` (``None``: the base image)."""

    resolution: Resolution | None
    stack: Stack | None = None
    notes: tuple[str, ...] = ()  # what was installed instead, left out, provided by the stack
    log: str = ""  # the build log's requirements lines

    @property
    def stack_label(self) -> str:
        return self.stack.describe() if self.stack else ""


@dataclass
class _Wanted:
    requirements: list[str] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)  # environment.yml requirement -> its line
    notes: list[str] = field(default_factory=list)


def has_package_files(validated: ValidatedZip) -> bool:
    return any(e.path in (REQUIREMENTS_FILE, ENVIRONMENT_FILE) for e in validated.entries)


def wanted_requirements(validated: ValidatedZip, *, python: str = "3.11") -> _Wanted:
    """requirements.txt and environment.yml merged (``RequirementsError`` names the file and line)."""
    wanted = _Wanted()
    text = read_package_file(validated, REQUIREMENTS_FILE, MAX_REQUIREMENTS_BYTES)
    named: set[str] = set()
    if text is not None:
        wanted.requirements = parse_requirements(text)
        named = {canonicalize_name(Requirement(r).name) for r in wanted.requirements}
    text = read_package_file(validated, ENVIRONMENT_FILE, MAX_ENVIRONMENT_BYTES)
    if text is not None:
        env = parse_environment(text, python=python)
        for line in env.left_out:
            wanted.notes.append(f"{ENVIRONMENT_FILE}: left out {line}")
        for requirement in env.requirements:
            name = canonicalize_name(Requirement(requirement).name)
            if name in named:
                wanted.notes.append(
                    f"{ENVIRONMENT_FILE}: {env.origins[requirement]} skipped: "
                    f"{REQUIREMENTS_FILE} names {name}"
                )
                continue
            named.add(name)
            wanted.requirements.append(requirement)
            wanted.origins[requirement] = env.origins[requirement]
    return wanted


def _name(requirement: str) -> str:
    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        return canonicalize_name(requirement.split("=")[0].split("<")[0].split(">")[0].strip())


def _pinned(requirement: str, version: str) -> str:
    """``requirement`` pinned to exactly ``version``, its extras and markers kept."""
    parsed = Requirement(requirement)
    parsed.specifier = SpecifierSet(f"=={version}")
    return str(parsed)


def _apply_stacks(wanted: _Wanted, stacks: AgentStacks) -> tuple[list[str], Stack | None]:
    """Take the requirements a stack provides out of pip's list, checked against the stack's version."""
    rest: list[str] = []
    used: Stack | None = None
    for requirement in wanted.requirements:
        spec = stacks.spec_for(requirement)
        if spec is None:
            rest.append(requirement)
            continue
        stack = stacks.provider(requirement)
        if stack is None:
            raise missing_stack_error(spec)
        name = _name(requirement)
        version = stack.version_of(name)
        origin = wanted.origins.get(requirement)
        if not Requirement(requirement).specifier.contains(version, prereleases=True):
            if origin is None:
                raise RequirementsError(
                    f"{REQUIREMENTS_FILE}: {requirement} cannot be met: this server gives every agent "
                    f"{name} {version} from its shared {stack.spec.description} stack (it is too big to "
                    f"install per agent); ask for a version {version} satisfies, e.g. just {name}"
                )
            wanted.notes.append(
                f"{ENVIRONMENT_FILE}: {origin}: {name} {version} from this server's shared stack instead"
            )
        used = stack
    return rest, used


def _relaxed_key(requirements: list[str], target: TargetPlatform, settings: BuilderSettings) -> str:
    text = json.dumps(
        {
            "v": RELAXER_VERSION,
            "requirements": requirements,
            "target": asdict(target),
            "index": settings.pip_index_url,
            "extra": settings.pip_extra_index_url,
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def resolve_wanted(
    wanted: _Wanted,
    target: TargetPlatform,
    settings: BuilderSettings,
    stacks: AgentStacks,
) -> PackagePlan:
    """Resolve ``wanted`` into wheels, relaxing environment.yml pins that have no wheel here."""
    requirements, stack = _apply_stacks(wanted, stacks)
    notes = list(wanted.notes)
    if not requirements:
        if stack is not None:
            notes.append(f"{stack.describe()} from this server's shared stack ({stack.image})")
        return PackagePlan(resolution=None, stack=stack, notes=tuple(notes))
    cache = WheelCache(settings.wheel_cache)
    find_links, constraints = stacks.pip_options()
    # A relaxation found once is remembered: the same file never asks the index for a missing pin again.
    memo = cache.root / "relaxed" / f"{_relaxed_key(requirements, target, settings)}.json"
    origins = dict(wanted.origins)
    # (the file's pin, the pin installed, the package, the version chosen): notes are written from this
    # file's own lines, so a remembered relaxation found for another file never names that file's lines
    pins: list[tuple[str, str, str, str]] = []
    try:
        remembered = json.loads(memo.read_text())
        pins = [tuple(p) for p in remembered["pins"]]
        requirements = list(remembered["requirements"])
        for old, new, _, _ in pins:
            origins[new] = origins.get(old, old)
    except (OSError, ValueError, KeyError, TypeError):
        pins = []
    tried: set[str] = set()
    while True:
        try:
            resolution = cache.resolve(
                requirements, target, settings, find_links=find_links, constraints=constraints
            )
            break
        except ConflictError as exc:  # a dependency needs a stack this host lacks: its constraint refused it
            spec = next((s for s in stacks.missing() if f"missing.{STUB_MARK}" in exc.output), None)
            if spec is not None:
                raise missing_stack_error(spec) from exc
            raise
        except NoWheelError as exc:
            missing = _name(exc.requirement)
            spec = stacks.spec_for(missing)
            if spec is not None and stacks.provider(missing) is None:
                raise missing_stack_error(spec) from exc
            index = next(
                (i for i, r in enumerate(requirements) if _name(r) == missing and r in origins), None
            )
            if index is None or missing in tried:
                raise
            tried.add(missing)
            old = requirements[index]
            chosen = nearest_version(old, exc.versions)
            if chosen is None:
                raise RequirementsError(
                    f"{ENVIRONMENT_FILE}: {origins[old]}: no wheel of {missing} for this server's platform "
                    f"({target.describe()}) on its package index, in any version"
                ) from exc
            new = _pinned(old, chosen)
            origins[new] = origins[old]
            requirements[index] = new
            pins.append((old, new, missing, str(chosen)))
    if pins and not memo.is_file():
        _write_atomic(memo, json.dumps({"requirements": requirements, "pins": pins}))
    notes += [
        f"{ENVIRONMENT_FILE}: {origins.get(old, old)} has no wheel for Python {target.python}: installed "
        f"{missing} {chosen} instead (the nearest version on this server's package index)"
        for old, _, missing, chosen in pins
    ]
    resolution, used = stacks.split(resolution)
    stack = stack or used
    if stack is not None:
        notes.append(f"{stack.describe()} from this server's shared stack ({stack.image})")
    where = "from the wheel cache" if resolution.cached else f"from {settings.pip_index_url}"
    listed = ", ".join(f"{name}=={version}" for name, version in resolution.packages())
    log = (
        f"requirements: {len(resolution.wheels)} wheel(s), {resolution.total_bytes / 2**20:.1f} MiB, "
        f"{where} in {resolution.seconds:.1f} s: {listed}\n"
    )
    return PackagePlan(
        resolution=resolution if resolution.wheels else None, stack=stack, notes=tuple(notes), log=log
    )


def plan_packages(validated: ValidatedZip, target_of, settings: BuilderSettings, client) -> PackagePlan:
    """The packages of a Python submission. ``target_of()`` returns the base image's ``TargetPlatform``
    (probed only when something is to be resolved); ``client`` is the docker client (stack images).
    ``RequirementsError``: the author's; ``StackError``, ``WheelCacheError``: ours."""
    if not has_package_files(validated):
        return PackagePlan(resolution=None)
    target: TargetPlatform = target_of()
    wanted = wanted_requirements(validated, python=target.python)
    if not wanted.requirements:
        return PackagePlan(resolution=None, notes=tuple(wanted.notes), log=_notes_log(wanted.notes))
    from builder.stacks import installed_stacks

    root = WheelCache(settings.wheel_cache).root
    present = installed_stacks(client)
    try:
        plan = resolve_wanted(copy.deepcopy(wanted), target, settings, AgentStacks(present, root))
    except StackError:
        # A stack this agent needs is not on this host: pulled when another host pushed it
        # (AGENT_STACK_TORCH_IMAGE names it in the registry), then resolved again.
        pulled = installed_stacks(client, pull=True)
        if len(pulled) == len(present):
            raise
        plan = resolve_wanted(copy.deepcopy(wanted), target, settings, AgentStacks(pulled, root))
    return PackagePlan(
        resolution=plan.resolution, stack=plan.stack, notes=plan.notes, log=plan.log + _notes_log(plan.notes)
    )


def stack_pip_options(settings: BuilderSettings, client) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(find_links, constraints)`` every agent resolution on this host is made with (the stub wheels of
    the stacks present, constraints keeping torch off the index): what ``WheelCache.resolve`` needs to find
    a build's resolution again."""
    from builder.stacks import installed_stacks

    return AgentStacks(installed_stacks(client), WheelCache(settings.wheel_cache).root).pip_options()


def _notes_log(notes) -> str:
    return "".join(f"packages: {note}\n" for note in notes)
