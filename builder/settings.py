"""Operator settings of the builder, read from the environment by ``envsettings`` (no Django here).

| variable | default | meaning |
|---|---|---|
| AGENT_BASE_IMAGE | rl-arena-agent-base:1 | base of Python agent images (scripts/build_base_image.sh) |
| AGENT_CPP_BASE_IMAGE | rl-arena-agent-base-cpp:1 | base of C++ agent images (g++) |
| AGENT_JS_BASE_IMAGE | rl-arena-agent-base-js:1 | base of JavaScript agent images (Node.js) |
| AGENT_BUILD_TIMEOUT_S | 600 | wall-clock cap of one image build |
| AGENT_BUILD_MEMORY_MB | 1024 | memory (= memory+swap) of each build step |
| AGENT_IMAGE_REPOSITORY | rl-arena-agent | repository part of the content-derived image tags |
| AGENT_PIP_INDEX_URL | https://pypi.org/simple | index the worker host fetches wheels from |
| AGENT_PIP_EXTRA_INDEX_URL | (none) | one more index, e.g. https://download.pytorch.org/whl/cpu |
| AGENT_WHEEL_CACHE_DIR | $RL_ARENA_DATA_DIR/cache/wheels | the shared content-addressed wheel cache |
| AGENT_WHEEL_CACHE_MB | 10240 | its size: least recently used resolutions (unused for 1 h) go beyond it |
| AGENT_PACKAGES_MAX_MB | 1024 | cap of the wheels fetched and of the installed packages |
| AGENT_PACKAGES_MAX_FILES | 50000 | cap of the number of installed files |
| AGENT_PACKAGES_TIMEOUT_S | 300 | cap of fetching the wheels, and of installing them |
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envsettings import env_int, env_str, env_url

_REPO = Path(__file__).resolve().parent.parent


def _default_wheel_cache() -> Path:
    data = env_str("RL_ARENA_DATA_DIR") or env_str("DATA_DIR")
    return (Path(data) if data else _REPO / "data") / "cache" / "wheels"


@dataclass(frozen=True)
class BuilderSettings:
    """What the operator decides about builds."""

    base_image: str = "rl-arena-agent-base:1"
    cpp_base_image: str = "rl-arena-agent-base-cpp:1"
    js_base_image: str = "rl-arena-agent-base-js:1"
    build_timeout_s: int = 600
    build_memory_mb: int = 1024
    image_repository: str = "rl-arena-agent"
    pip_index_url: str = "https://pypi.org/simple"
    pip_extra_index_url: str = ""
    wheel_cache_dir: Path | None = None  # None: $RL_ARENA_DATA_DIR/cache/wheels
    wheel_cache_mb: int = 10240
    packages_max_mb: int = 1024
    packages_max_files: int = 50000
    packages_timeout_s: int = 300

    @classmethod
    def from_env(cls) -> BuilderSettings:
        """Read the settings from environment variables (see the module docstring); a malformed value
        raises ``envsettings.SettingsError`` naming the variable and the value."""
        cache = env_str("AGENT_WHEEL_CACHE_DIR")
        return cls(
            base_image=env_str("AGENT_BASE_IMAGE", cls.base_image),
            cpp_base_image=env_str("AGENT_CPP_BASE_IMAGE", cls.cpp_base_image),
            js_base_image=env_str("AGENT_JS_BASE_IMAGE", cls.js_base_image),
            build_timeout_s=env_int("AGENT_BUILD_TIMEOUT_S", cls.build_timeout_s, minimum=0),
            build_memory_mb=env_int("AGENT_BUILD_MEMORY_MB", cls.build_memory_mb, minimum=64),
            image_repository=env_str("AGENT_IMAGE_REPOSITORY", cls.image_repository),
            pip_index_url=env_url("AGENT_PIP_INDEX_URL", cls.pip_index_url),
            pip_extra_index_url=env_url("AGENT_PIP_EXTRA_INDEX_URL", ""),
            wheel_cache_dir=Path(cache) if cache else None,
            wheel_cache_mb=env_int("AGENT_WHEEL_CACHE_MB", cls.wheel_cache_mb, minimum=1),
            packages_max_mb=env_int("AGENT_PACKAGES_MAX_MB", cls.packages_max_mb, minimum=1),
            packages_max_files=env_int("AGENT_PACKAGES_MAX_FILES", cls.packages_max_files, minimum=1),
            packages_timeout_s=env_int("AGENT_PACKAGES_TIMEOUT_S", cls.packages_timeout_s, minimum=1),
        )

    @property
    def wheel_cache(self) -> Path:
        """The wheel cache folder (the setting, else ``$RL_ARENA_DATA_DIR/cache/wheels``)."""
        return self.wheel_cache_dir or _default_wheel_cache()

    def base_image_for(self, language: str) -> str:
        """The base image of agents written in ``language`` (an ``agent_uploads.languages`` key)."""
        return {"python": self.base_image, "cpp": self.cpp_base_image, "javascript": self.js_base_image}[
            language
        ]
