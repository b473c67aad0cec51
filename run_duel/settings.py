r"""The referee's and the sandboxes' settings, read once from the environment by ``envsettings`` (a
malformed value stops the process with a message naming the variable and the value).

| variable | default | meaning |
|---|---|---|
| AGENT_RUNTIME_DIR | the system temp folder | per-launch socket folders, CPU-slot and image-pull locks |
| AGENT_CGROUP_ROOT | from /proc/self/mountinfo | the host's cgroup file system as this worker sees it |
| SANDBOX_ALLOW_UNISOLATED | off | the local sandbox without bubblewrap runs plain subprocesses (warned) |
| DUEL_CPU_PINNING | on | a duel's referee and agents share one free core once they are ready |
| AGENT_IMAGE_CACHE_BYTES | 10 GiB | agent images each worker host keeps (0: no limit) |
| AGENT_REGISTRY | (none) | ``[http://\|https://]host[:port][/prefix]``; empty or ``none``: no registry |
| AGENT_REGISTRY_USERNAME, AGENT_REGISTRY_PASSWORD (or _FILE) | | its credentials (both or neither) |
| AGENT_REGISTRY_API_URL | | where this process reaches the registry's API, when not at its address |

``core.settings`` takes the Django settings of the same names from this object (``run_duel.api``): each
variable is parsed here only.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from envsettings import env_bool, env_int, env_secret, env_str, once_per_environment

DEFAULT_CACHE_BYTES = 10 * 1024**3
NO_REGISTRY = "none"

VARIABLES = (
    "AGENT_RUNTIME_DIR",
    "AGENT_CGROUP_ROOT",
    "SANDBOX_ALLOW_UNISOLATED",
    "DUEL_CPU_PINNING",
    "AGENT_IMAGE_CACHE_BYTES",
    "AGENT_REGISTRY",
    "AGENT_REGISTRY_USERNAME",
    "AGENT_REGISTRY_PASSWORD",
    "AGENT_REGISTRY_API_URL",
)


@dataclass(frozen=True)
class RunDuelSettings:
    """What the operator decides about duels on this host (the module docstring's table)."""

    runtime_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))
    cgroup_root: str = ""  # empty: where /proc/self/mountinfo says
    allow_unisolated: bool = False
    cpu_pinning: bool = True
    image_cache_bytes: int = DEFAULT_CACHE_BYTES
    registry: str = ""  # empty: no registry (the value "none" reads as empty)
    registry_username: str = ""
    registry_password: str = ""
    registry_api_url: str = ""

    @classmethod
    def from_env(cls) -> RunDuelSettings:
        """Read the settings from the environment (module docstring); raises ``SettingsError``."""
        registry = env_str("AGENT_REGISTRY")
        return cls(
            runtime_dir=Path(env_str("AGENT_RUNTIME_DIR") or tempfile.gettempdir()),
            cgroup_root=env_str("AGENT_CGROUP_ROOT"),
            allow_unisolated=env_bool("SANDBOX_ALLOW_UNISOLATED", False),
            cpu_pinning=env_bool("DUEL_CPU_PINNING", True),
            image_cache_bytes=env_int("AGENT_IMAGE_CACHE_BYTES", DEFAULT_CACHE_BYTES, minimum=0),
            registry="" if registry.lower() == NO_REGISTRY else registry,
            registry_username=env_str("AGENT_REGISTRY_USERNAME"),
            registry_password=env_secret("AGENT_REGISTRY_PASSWORD"),
            registry_api_url=env_str("AGENT_REGISTRY_API_URL"),
        )


@once_per_environment(VARIABLES)
def run_duel_settings() -> RunDuelSettings:
    """The settings of this process's environment, built once (again only when a variable changes)."""
    return RunDuelSettings.from_env()
