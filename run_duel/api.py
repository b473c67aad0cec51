"""The one door into ``run_duel`` for every other package (builder, core, duel_runner, web, ops, client).

Other packages import ``run_duel.api`` and nothing else of ``run_duel``; every name they use is listed in
``__all__``. A name loads its module when it is first used (``__getattr__``): ``from run_duel.api import
DuelResult`` costs the web the outcomes module alone, and importing this module loads neither numpy,
PyYAML, the Docker SDK nor jsonschema (``tests/run_duel/test_lazy_imports.py``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from run_duel import agent_formats
    from run_duel.agent_data import (
        DEFAULT_DATA_MB,
        MB,
        AgentData,
        DataError,
        archive_of,
        check_archive,
        files_of,
        load_host_folder,
        store_in_host_folder,
    )
    from run_duel.cli import main as run_cli
    from run_duel.duel_result import DuelResultError, validate_duel_json
    from run_duel.harness import HARNESS_DIR, PYTHON_HARNESS_FILES
    from run_duel.health import sandbox_problem
    from run_duel.outcomes import DuelResult, MatchResult
    from run_duel.referee import limits_for, play_duel
    from run_duel.registry import RegistryConfig, RegistryConfigError
    from run_duel.sandbox.base import (
        AGENT_ENTRY_FILES,
        HARNESS_PYTHON_FLAGS,
        LaunchSpec,
        Limits,
        Sandbox,
        SandboxError,
        has_agent_entry,
    )
    from run_duel.sandbox.docker_client import get_client as get_docker_client
    from run_duel.sandbox.docker_pools import close_warm_pools
    from run_duel.sandbox.docker_warm import ReusePolicy
    from run_duel.sandbox.images import (
        AGENT_IMAGE_LABEL,
        HostLock,
        ImageCache,
        ImageDigestMismatch,
        ImageMissing,
        ImageUnavailable,
        cache_budget_from_env,
        ensure_images,
        parse_digest_ref,
    )
    from run_duel.sandbox.orphans import reap_orphans
    from run_duel.seat import PlayerFault, Seat
    from run_duel.settings import RunDuelSettings, run_duel_settings
    from run_duel.stopping import PAIR as STOP_PAIR
    from run_duel.stopping import SequentialTest, StopRule

__all__ = [
    "AGENT_ENTRY_FILES",
    "AGENT_IMAGE_LABEL",
    "DEFAULT_DATA_MB",
    "HARNESS_DIR",
    "HARNESS_PYTHON_FLAGS",
    "MB",
    "PYTHON_HARNESS_FILES",
    "SANDBOXES",
    "STOP_PAIR",
    "AgentData",
    "DataError",
    "DuelResult",
    "DuelResultError",
    "HostLock",
    "ImageCache",
    "ImageDigestMismatch",
    "ImageMissing",
    "ImageUnavailable",
    "LaunchSpec",
    "Limits",
    "MatchResult",
    "PlayerFault",
    "RegistryConfig",
    "RegistryConfigError",
    "ReusePolicy",
    "RunDuelSettings",
    "Sandbox",
    "SandboxError",
    "Seat",
    "SequentialTest",
    "SmokeResult",
    "StopRule",
    "agent_formats",
    "archive_of",
    "cache_budget_from_env",
    "check_archive",
    "close_warm_pools",
    "ensure_images",
    "files_of",
    "get_docker_client",
    "get_sandbox",
    "has_agent_entry",
    "limits_for",
    "load_host_folder",
    "parse_digest_ref",
    "play_duel",
    "reap_orphans",
    "run_cli",
    "run_duel_settings",
    "sandbox_problem",
    "smoke_test",
    "store_in_host_folder",
    "validate_duel_json",
]

#: Where each exported name lives: ``"module"`` (the name is that module's attribute of the same name),
#: ``"module:attribute"``, or ``"module:"`` (the module itself).
_EXPORTS = {
    "agent_formats": "run_duel.agent_formats:",
    **dict.fromkeys(
        (
            "DEFAULT_DATA_MB",
            "MB",
            "AgentData",
            "DataError",
            "archive_of",
            "check_archive",
            "files_of",
            "load_host_folder",
            "store_in_host_folder",
        ),
        "run_duel.agent_data",
    ),
    "run_cli": "run_duel.cli:main",
    **dict.fromkeys(("DuelResultError", "validate_duel_json"), "run_duel.duel_result"),
    **dict.fromkeys(("HARNESS_DIR", "PYTHON_HARNESS_FILES"), "run_duel.harness"),
    "sandbox_problem": "run_duel.health",
    **dict.fromkeys(
        (
            "AGENT_IMAGE_LABEL",
            "HostLock",
            "ImageCache",
            "ImageDigestMismatch",
            "ImageMissing",
            "ImageUnavailable",
            "cache_budget_from_env",
            "ensure_images",
            "parse_digest_ref",
        ),
        "run_duel.sandbox.images",
    ),
    **dict.fromkeys(("DuelResult", "MatchResult"), "run_duel.outcomes"),
    **dict.fromkeys(("limits_for", "play_duel"), "run_duel.referee"),
    **dict.fromkeys(("RegistryConfig", "RegistryConfigError"), "run_duel.registry"),
    **dict.fromkeys(("RunDuelSettings", "run_duel_settings"), "run_duel.settings"),
    **dict.fromkeys(
        (
            "AGENT_ENTRY_FILES",
            "HARNESS_PYTHON_FLAGS",
            "LaunchSpec",
            "Limits",
            "Sandbox",
            "SandboxError",
            "has_agent_entry",
        ),
        "run_duel.sandbox.base",
    ),
    "get_docker_client": "run_duel.sandbox.docker_client:get_client",
    "close_warm_pools": "run_duel.sandbox.docker_pools",
    "ReusePolicy": "run_duel.sandbox.docker_warm",
    "reap_orphans": "run_duel.sandbox.orphans",
    **dict.fromkeys(("PlayerFault", "Seat"), "run_duel.seat"),
    **dict.fromkeys(("SequentialTest", "StopRule"), "run_duel.stopping"),
    "STOP_PAIR": "run_duel.stopping:PAIR",
}


def __getattr__(name: str) -> Any:
    """Load an exported name's module the first time the name is used."""
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    value = module if target.endswith(":") else getattr(module, attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


#: Sandbox names usable in settings and on the command line, with the class that implements each.
SANDBOXES = {
    "local": "run_duel.sandbox.local:LocalSandbox",
    "docker": "run_duel.sandbox.docker:DockerSandbox",
}


def get_sandbox(name: str, **options: Any) -> Sandbox:
    """Build the sandbox called ``name`` (``local`` or ``docker``); ``options`` go to its constructor.

    The Docker SDK is only imported for ``docker``. Raises ``ValueError`` for an unknown name and
    ``SandboxError`` when the sandbox cannot be used here.
    """
    from run_duel.sandbox.base import SandboxError

    try:
        target = SANDBOXES[name]
    except KeyError:
        raise ValueError(f"unknown sandbox {name!r}; choose one of: {', '.join(SANDBOXES)}") from None
    module_name, class_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SandboxError(f"the {name} sandbox is not available: {exc}") from exc
    return getattr(module, class_name)(**options)


@dataclass(frozen=True)
class SmokeResult:
    """Outcome of a smoke test: ``ok`` iff no match had a player or infrastructure error."""

    ok: bool
    reason: str
    duel: dict[str, Any]


def smoke_test(
    game_slug: str,
    sandbox: Sandbox,
    agent: LaunchSpec,
    matches: int | None = None,
    *,
    pin_cpus: bool | None = None,
) -> SmokeResult:
    """Self-play: ``agent`` plays itself (two processes) for ``matches`` (default ``smoke_test_matches``);
    ``pin_cpus`` as in ``play_duel``."""
    from environments import get_info
    from run_duel.duel_result import OTHER_ERROR, PLAYER_1_ERROR, PLAYER_2_ERROR
    from run_duel.referee import play_duel

    if matches is None:
        matches = get_info(game_slug).smoke_test_matches
    duel = play_duel(game_slug, sandbox, agent, agent, matches=matches, pin_cpus=pin_cpus)
    if duel["result"] == "ERROR":
        return SmokeResult(False, f"the smoke test could not run (our side): {duel['error_msg']}", duel)
    for i, match in enumerate(duel["matches"]):
        if match["result"] in (PLAYER_1_ERROR, PLAYER_2_ERROR):
            return SmokeResult(
                False,
                f"match {i + 1} of {len(duel['matches'])}: {match['error_kind']}: {match['error_msg']}",
                duel,
            )
        if match["result"] == OTHER_ERROR:
            return SmokeResult(False, f"match {i + 1}: error on our side: {match['error_msg']}", duel)
    return SmokeResult(True, f"{len(duel['matches'])} self-play matches without errors", duel)
