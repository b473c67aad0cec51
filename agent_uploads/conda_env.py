"""A conda ``environment.yml``, translated into pip requirements the builder can install as wheels.

Agents written for the original rl-arena carry an ``environment.yml`` (conda) instead of a
``requirements.txt``. This module reads it (safe YAML: nothing in it is ever executed) and keeps what has a
known wheel equivalent:

* its ``pip:`` section, line by line, exactly as ``requirements.txt`` lines are checked
  (``builder.wheels.parse_requirements``: no options, URLs or paths);
* every conda package named in ``CONDA_TO_PYPI`` (``pytorch`` -> ``torch``, ``numpy``, ``pandas``...),
  with its pin translated: conda's ``numpy=1.17`` (any 1.17.x) becomes ``numpy==1.17.*``,
  ``numpy==1.17.2`` stays exact, ``>=``/``<`` ranges are kept, a build string (``=py37_0``) and a channel
  (``conda-forge::``) are dropped;
* the rest is left out, each with its reason: the interpreter and conda's own tooling (``python``, ``pip``,
  ``cudatoolkit``, ``mkl``...), tools an agent does not play with (``jupyter``, ``pytest``...), and
  packages without a known wheel (their author can list them under ``pip:``).

A file written for an older Python pins versions that have no wheel for the arena's interpreter (numpy
1.17 was built for Python 3.7): such a pin is *relaxed* to the nearest version the index has
(``nearest_version``), and the build log and the revision page say what was installed instead.
A file that does not parse, or is not a conda environment, is refused with a message naming the file and
the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from agent_uploads.requirements import RequirementsError, parse_requirements

ENVIRONMENT_FILE = "environment.yml"
#: The largest environment file read (bytes).
MAX_ENVIRONMENT_BYTES = 64 * 1024
MAX_DEPENDENCIES = 200

#: Conda package name -> the PyPI project that installs the same thing as a wheel.
CONDA_TO_PYPI: dict[str, str] = {
    "pytorch": "torch",
    "pytorch-cpu": "torch",
    "torch": "torch",
    "numpy": "numpy",
    "scipy": "scipy",
    "pandas": "pandas",
    "scikit-learn": "scikit-learn",
    "sklearn": "scikit-learn",
    "scikit-image": "scikit-image",
    "matplotlib": "matplotlib",
    "matplotlib-base": "matplotlib",
    "pillow": "pillow",
    "py-opencv": "opencv-python-headless",
    "opencv": "opencv-python-headless",
    "pyyaml": "pyyaml",
    "networkx": "networkx",
    "sympy": "sympy",
    "numba": "numba",
    "llvmlite": "llvmlite",
    "h5py": "h5py",
    "tqdm": "tqdm",
    "six": "six",
    "joblib": "joblib",
    "cloudpickle": "cloudpickle",
    "gym": "gym",
    "gymnasium": "gymnasium",
    "pettingzoo": "pettingzoo",
    "onnx": "onnx",
    "onnxruntime": "onnxruntime",
    "protobuf": "protobuf",
    "libprotobuf": "protobuf",
    "tensorflow": "tensorflow-cpu",
    "tensorflow-cpu": "tensorflow-cpu",
    "keras": "keras",
    "jax": "jax",
    "jaxlib": "jaxlib",
    "xgboost": "xgboost",
    "lightgbm": "lightgbm",
    "statsmodels": "statsmodels",
    "seaborn": "seaborn",
    "numexpr": "numexpr",
    "bottleneck": "bottleneck",
    "pyarrow": "pyarrow",
    "attrs": "attrs",
    "toolz": "toolz",
    "cython": "cython",
    "msgpack-python": "msgpack",
    "ujson": "ujson",
    "requests": "requests",
    "python-dateutil": "python-dateutil",
    "pytz": "pytz",
    "typing_extensions": "typing-extensions",
    "typing-extensions": "typing-extensions",
}

#: Left out on purpose (prefixes end with "-" or "*"): the interpreter and conda's machinery (the arena has
#: its own Python), GPU libraries (agents run on CPUs), notebooks, test and lint tools.
_NOT_FOR_AGENTS = {
    "python": "the arena runs its own Python ({python})",
    "pip": "the builder installs wheels itself",
    "setuptools": "the builder installs wheels itself",
    "wheel": "the builder installs wheels itself",
    "conda": "conda's own tooling",
    "conda-build": "conda's own tooling",
    "cpuonly": "conda's own tooling (agents run on CPUs)",
    "pytorch-mutex": "conda's own tooling",
    "cudatoolkit": "GPU libraries: agents run on CPUs",
    "cudnn": "GPU libraries: agents run on CPUs",
    "nccl": "GPU libraries: agents run on CPUs",
    "pytorch-cuda": "GPU libraries: agents run on CPUs",
    "cuda*": "GPU libraries: agents run on CPUs",
    "mkl*": "a native library conda bundles (the wheels carry their own)",
    "blas": "a native library conda bundles (the wheels carry their own)",
    "libblas": "a native library conda bundles (the wheels carry their own)",
    "openblas": "a native library conda bundles (the wheels carry their own)",
    "intel-openmp": "a native library conda bundles (the wheels carry their own)",
    "jupyter*": "a notebook tool, not used by a playing agent",
    "notebook": "a notebook tool, not used by a playing agent",
    "ipython": "a notebook tool, not used by a playing agent",
    "ipykernel": "a notebook tool, not used by a playing agent",
    "ipywidgets": "a notebook tool, not used by a playing agent",
    "nb_conda*": "a notebook tool, not used by a playing agent",
    "pytest*": "a test tool, not used by a playing agent",
    "flake8": "a development tool, not used by a playing agent",
    "pylint": "a development tool, not used by a playing agent",
    "black": "a development tool, not used by a playing agent",
    "mypy": "a development tool, not used by a playing agent",
    "tensorboard": "a training tool, not used by a playing agent",
}
_NATIVE_PREFIXES = ("lib", "_")  # libgcc-ng, libstdcxx-ng, _libgcc_mutex, _openmp_mutex: conda's C runtime
_NATIVE = {"ca-certificates", "openssl", "certifi", "readline", "sqlite", "tk", "xz", "zlib", "ncurses",
           "ld_impl_linux-64", "tzdata", "bzip2"}  # fmt: skip

_CONDA_SPEC = re.compile(r"^(?:[A-Za-z0-9_.\-/]+::)?(?P<name>[A-Za-z0-9_.\-]+)\s*(?P<rest>.*)$")


@dataclass(frozen=True)
class CondaEnvironment:
    """What an ``environment.yml`` asks for, as pip requirements, and what was left out."""

    #: pip requirement lines (normalised), the ``pip:`` section's first.
    requirements: tuple[str, ...] = ()
    #: requirement -> how the file wrote it ("numpy=1.17.2 (line 7)"): these pins may be relaxed.
    origins: dict[str, str] = field(default_factory=dict)
    #: one sentence per entry left out.
    left_out: tuple[str, ...] = ()


def _mark(node: yaml.Node | None) -> int:
    return node.start_mark.line + 1 if node is not None else 1


def _fail(filename: str, line: int, message: str) -> RequirementsError:
    return RequirementsError(f"{filename} line {line}: {message}")


def _scalar(node: yaml.Node, filename: str, what: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise _fail(filename, _mark(node), f"{what} must be a single line of text")
    return str(node.value).strip()


def parse_environment(
    text: str, *, python: str = "3.11", filename: str = ENVIRONMENT_FILE
) -> CondaEnvironment:
    """Translate the conda environment ``text`` (see the module docstring); ``python`` is the arena's
    interpreter version, for the messages. ``RequirementsError`` (naming ``filename`` and the line) when it
    does not parse or is not a conda environment."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise _fail(filename, line, f"this is not valid YAML ({exc.problem or exc.context})") from None
    except yaml.YAMLError as exc:
        raise RequirementsError(f"{filename}: this is not valid YAML ({exc})") from None
    if root is None:
        return CondaEnvironment()
    if not isinstance(root, yaml.MappingNode):
        shown = str(getattr(root, "value", ""))[:60]
        raise _fail(
            filename,
            _mark(root),
            f"a conda environment file is a mapping with a 'dependencies:' list, not {shown!r}",
        )
    dependencies = None
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and key.value == "dependencies":
            dependencies = value
    if dependencies is None or (isinstance(dependencies, yaml.ScalarNode) and not dependencies.value):
        return CondaEnvironment()
    if not isinstance(dependencies, yaml.SequenceNode):
        raise _fail(filename, _mark(dependencies), "'dependencies:' must be a list of packages")
    if len(dependencies.value) > MAX_DEPENDENCIES:
        raise _fail(filename, _mark(dependencies), f"more than {MAX_DEPENDENCIES} dependencies")

    pip_lines: list[tuple[str, int]] = []
    conda: list[tuple[str, int]] = []
    for item in dependencies.value:
        if isinstance(item, yaml.MappingNode):
            for key, value in item.value:
                name = _scalar(key, filename, "a dependency's key")
                if name != "pip":
                    raise _fail(filename, _mark(key), f"unknown dependency section {name!r} (only 'pip:')")
                if not isinstance(value, yaml.SequenceNode):
                    raise _fail(filename, _mark(value), "'pip:' must be a list of requirements")
                pip_lines += [(_scalar(v, filename, "a pip requirement"), _mark(v)) for v in value.value]
        else:
            conda.append((_scalar(item, filename, "a dependency"), _mark(item)))

    requirements: list[str] = []
    origins: dict[str, str] = {}
    left_out: list[str] = []
    seen: set[str] = set()
    for line_text, line in pip_lines:
        try:
            parsed = parse_requirements(line_text)
        except RequirementsError as exc:
            reason = str(exc).split(": ", 1)[-1]
            raise _fail(filename, line, f"pip requirement {line_text[:80]!r}: {reason}") from None
        for requirement in parsed:
            seen.add(canonicalize_name(Requirement(requirement).name))
            requirements.append(requirement)
            origins[requirement] = f"{line_text} (line {line})"
    for spec, line in conda:
        translated, why = translate_conda_spec(spec, python=python)
        if translated is None:
            left_out.append(f"{spec} (line {line}): {why}")
            continue
        name = canonicalize_name(Requirement(translated).name)
        if name in seen:
            left_out.append(f"{spec} (line {line}): {name} is already listed under pip:")
            continue
        seen.add(name)
        requirements.append(translated)
        origins[translated] = f"{spec} (line {line})"
    return CondaEnvironment(requirements=tuple(requirements), origins=origins, left_out=tuple(left_out))


def _left_out_reason(name: str, python: str) -> str | None:
    lowered = name.lower()
    for pattern, reason in _NOT_FOR_AGENTS.items():
        if lowered == pattern or (pattern.endswith("*") and lowered.startswith(pattern[:-1])):
            return reason.format(python=python)
    if lowered in _NATIVE or (lowered.startswith(_NATIVE_PREFIXES) and lowered not in CONDA_TO_PYPI):
        return "a native library conda bundles (the wheels carry their own)"
    return None


def translate_conda_spec(spec: str, *, python: str = "3.11") -> tuple[str | None, str]:
    """``(pip requirement, "")`` for a conda match spec with a known wheel, else ``(None, why it is left
    out)``. ``numpy=1.17`` -> ``numpy==1.17.*``; ``numpy==1.17.2`` -> ``numpy==1.17.2``; ``numpy>=1.16,<2``
    kept; ``numpy 1.17.2 py37_0`` and ``numpy=1.17.2=py37_0`` drop the build string; a pin that cannot be
    read leaves the package unpinned."""
    match = _CONDA_SPEC.match(spec.strip())
    if match is None:
        return None, "not a conda package specification"
    name, rest = match["name"], match["rest"].strip()
    reason = _left_out_reason(name, python)
    if reason is not None:
        return None, reason
    pypi = CONDA_TO_PYPI.get(name.lower())
    if pypi is None:
        return None, "no known wheel equivalent (list it under 'pip:' to install it from the package index)"
    specifier = _conda_version(rest)
    return str(Requirement(f"{pypi}{specifier}" if specifier is not None else pypi)), ""


def _conda_version(rest: str) -> str | None:
    """The PEP 440 specifier of a conda version constraint ("" or None when unpinned or unreadable)."""
    rest = rest.strip()
    if not rest:
        return None
    if rest.startswith("=="):  # exact; ==1.17.2=py37_0 drops the build string
        spec = "==" + rest[2:].split("=", 1)[0].split()[0]
    elif rest.startswith("="):  # =1.17 is any 1.17.x; =1.17.2=py37_0 drops the build string
        version = rest[1:].split("=", 1)[0].split()[0]
        spec = f"=={version}" if version.endswith("*") else f"=={version}.*"
    elif rest[0] in "<>!~":
        spec = rest.split()[0]
    else:  # "1.17.2 py37_0": a version and a build string, separated by spaces
        version = rest.split()[0]
        spec = f"=={version}" if version.endswith("*") else f"=={version}.*"
    spec = spec.replace(".*.*", ".*")
    if "|" in spec:
        return None
    try:
        SpecifierSet(spec)
    except InvalidSpecifier:
        return None
    return spec


def pinned_version(requirement: str) -> Version | None:
    """The version a requirement's pin is about (its lowest bound or exact version), or None unpinned."""
    try:
        parsed = Requirement(requirement)
    except InvalidRequirement:
        return None
    versions = []
    for spec in parsed.specifier:
        if spec.operator in ("==", "===", ">=", "~=", ">", "<=", "<"):
            try:
                versions.append(Version(spec.version.rstrip(".*")))
            except InvalidVersion:
                continue
    return min(versions) if versions else None


def nearest_version(requirement: str, available: tuple[str, ...] | list[str]) -> str | None:
    """The available version nearest to what ``requirement`` pins: the newest release of the first
    major.minor series at or after the pinned version (numpy 1.16 -> numpy 1.23.5 when wheels start at
    1.23), else the newest release before it. ``None`` when nothing is available."""
    releases: list[Version] = []
    for text in available:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not version.is_prerelease and not version.is_devrelease:
            releases.append(version)
    if not releases:
        return None
    pinned = pinned_version(requirement)
    if pinned is None:
        return str(max(releases))
    after = [v for v in releases if v.release[:2] >= pinned.release[:2]]
    if after:
        series = min(v.release[:2] for v in after)
        return str(max(v for v in after if v.release[:2] == series))
    return str(max(releases))
