"""The stable entry points other packages (builder, duel_runner, web) use. Nothing else is public."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from environments import get_info
from run_duel.agent_data import AgentData, DataError, check_archive
from run_duel.duel_result import (
    OTHER_ERROR,
    PLAYER_1_ERROR,
    PLAYER_2_ERROR,
    DuelResultError,
    validate_duel_json,
)
from run_duel.referee import play_duel
from run_duel.sandbox.base import LaunchSpec, Limits, Sandbox, SandboxError
from run_duel.sandbox.docker_warm import ReusePolicy

__all__ = [
    "SANDBOXES",
    "AgentData",
    "DataError",
    "DuelResultError",
    "LaunchSpec",
    "Limits",
    "ReusePolicy",
    "Sandbox",
    "SandboxError",
    "SmokeResult",
    "check_archive",
    "get_sandbox",
    "play_duel",
    "smoke_test",
    "validate_duel_json",
]

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
