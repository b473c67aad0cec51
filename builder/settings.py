"""Operator settings of the builder, read from the environment (no Django here).

| variable | default | meaning |
|---|---|---|
| AGENT_BASE_IMAGE | rl-arena-agent-base:1 | base of every agent image (scripts/build_base_image.sh) |
| AGENT_ALLOW_PACKAGE_INSTALLS | false | pip-install a submission's requirements.txt (build gets network) |
| AGENT_BUILD_TIMEOUT_S | 600 | wall-clock cap of one image build |
| AGENT_BUILD_MEMORY_MB | 1024 | memory (= memory+swap) of each build step |
| AGENT_IMAGE_REPOSITORY | rl-arena-agent | repository part of the content-derived image tags |
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_TRUE = {"1", "true", "yes", "on"}


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in _TRUE


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc


@dataclass(frozen=True)
class BuilderSettings:
    """What the operator decides about builds."""

    base_image: str = "rl-arena-agent-base:1"
    allow_package_installs: bool = False
    build_timeout_s: int = 600
    build_memory_mb: int = 1024
    image_repository: str = "rl-arena-agent"

    @classmethod
    def from_env(cls) -> BuilderSettings:
        """Read the settings from environment variables (see the module docstring)."""
        return cls(
            base_image=os.environ.get("AGENT_BASE_IMAGE", "").strip() or cls.base_image,
            allow_package_installs=_env_bool("AGENT_ALLOW_PACKAGE_INSTALLS", False),
            build_timeout_s=_env_int("AGENT_BUILD_TIMEOUT_S", cls.build_timeout_s),
            build_memory_mb=_env_int("AGENT_BUILD_MEMORY_MB", cls.build_memory_mb),
            image_repository=os.environ.get("AGENT_IMAGE_REPOSITORY", "").strip() or cls.image_repository,
        )
