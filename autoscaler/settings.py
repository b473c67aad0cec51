"""The autoscaler's settings, read once from the environment by ``envsettings`` (a malformed value stops
the process with a message naming the variable and the value).

| variable | default | meaning |
|---|---|---|
| AUTOSCALER_PROVIDER | local | ``local`` (worker processes here) or ``digitalocean`` (droplets) |
| AUTOSCALER_MIN_WORKERS / AUTOSCALER_MAX_WORKERS | 0 / 4 | floor and ceiling of the autoscaled pool |
| AUTOSCALER_JOBS_PER_WORKER | $WORKER_CONCURRENCY or 2 | jobs one worker runs at once |
| AUTOSCALER_MAX_WAIT_S | 60 | a queued job older than this forces one more worker |
| AUTOSCALER_MAX_STEP_UP / AUTOSCALER_MAX_STEP_DOWN | 2 / 1 | workers added / drained per step |
| AUTOSCALER_MIN_AGE_S | 300 | never drain a worker younger than this |
| AUTOSCALER_INTERVAL_S | 30 | seconds between steps (``python -m autoscaler run``) |
| AUTOSCALER_DRY_RUN | 0 | 1: print the provider calls instead of making them |
| AUTOSCALER_RUN_DIR | $DATA_DIR/run/autoscaler | local provider: pid files and logs |
| AUTOSCALER_DO_TOKEN (or _FILE) | | DigitalOcean API token |
| AUTOSCALER_DO_API_URL | https://api.digitalocean.com/v2 | API base address (tests: a local server) |
| AUTOSCALER_DO_REGION, _SIZE, _IMAGE, _VPC_UUID, _TAG, _SSH_KEYS | | droplet spec (terraform writes them) |
| AUTOSCALER_DO_USER_DATA_FILE | | workers' cloud-init template (terraform: $DATA_DIR/autoscaler/) |
| AUTOSCALER_JOIN_KEY (or _FILE) | | signs each droplet's one-time join ticket (``autoscaler.join``) |
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envsettings import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_secret,
    env_str,
    env_url,
    once_per_environment,
)

VARIABLES = (
    "AUTOSCALER_PROVIDER",
    "AUTOSCALER_MIN_WORKERS",
    "AUTOSCALER_MAX_WORKERS",
    "AUTOSCALER_JOBS_PER_WORKER",
    "WORKER_CONCURRENCY",
    "AUTOSCALER_MAX_WAIT_S",
    "AUTOSCALER_MAX_STEP_UP",
    "AUTOSCALER_MAX_STEP_DOWN",
    "AUTOSCALER_MIN_AGE_S",
    "AUTOSCALER_INTERVAL_S",
    "AUTOSCALER_DRY_RUN",
    "DATA_DIR",
    "AUTOSCALER_RUN_DIR",
    "AUTOSCALER_DO_TOKEN",
    "AUTOSCALER_DO_API_URL",
    "AUTOSCALER_DO_REGION",
    "AUTOSCALER_DO_SIZE",
    "AUTOSCALER_DO_IMAGE",
    "AUTOSCALER_DO_VPC_UUID",
    "AUTOSCALER_DO_TAG",
    "AUTOSCALER_DO_SSH_KEYS",
    "AUTOSCALER_DO_USER_DATA_FILE",
    "AUTOSCALER_JOIN_KEY",
)


@dataclass(frozen=True)
class AutoscalerSettings:
    """What the operator decides about autoscaling (the module docstring's table)."""

    provider: str = "local"
    min_workers: int = 0
    max_workers: int = 4
    jobs_per_worker: int = 2
    max_wait_s: float = 60.0
    max_step_up: int = 2
    max_step_down: int = 1
    min_age_s: float = 300.0
    interval_s: float = 30.0
    dry_run: bool = False
    run_dir: Path = Path("data") / "run" / "autoscaler"
    do_token: str = ""
    do_api_url: str = ""  # empty: DigitalOcean's own API
    do_region: str = "fra1"
    do_size: str = "s-2vcpu-4gb"
    do_image: str = "ubuntu-24-04-x64"
    do_vpc_uuid: str = ""
    do_tag: str = "rl-arena-worker-auto"
    do_ssh_keys: tuple[str, ...] = ()
    do_user_data_file: str = ""
    join_key: str = ""

    @classmethod
    def from_env(cls) -> AutoscalerSettings:
        """Read the settings from the environment (see the module docstring); raises ``SettingsError``."""
        data_dir = Path(env_str("DATA_DIR", "data"))
        return cls(
            provider=env_choice("AUTOSCALER_PROVIDER", "local", ("local", "digitalocean")),
            min_workers=env_int("AUTOSCALER_MIN_WORKERS", 0, minimum=0),
            max_workers=env_int("AUTOSCALER_MAX_WORKERS", 4, minimum=0),
            jobs_per_worker=env_int(
                "AUTOSCALER_JOBS_PER_WORKER", env_int("WORKER_CONCURRENCY", 2, minimum=1), minimum=1
            ),
            max_wait_s=env_float("AUTOSCALER_MAX_WAIT_S", 60.0, minimum=0.0),
            max_step_up=env_int("AUTOSCALER_MAX_STEP_UP", 2, minimum=0),
            max_step_down=env_int("AUTOSCALER_MAX_STEP_DOWN", 1, minimum=0),
            min_age_s=env_float("AUTOSCALER_MIN_AGE_S", 300.0, minimum=0.0),
            interval_s=env_float("AUTOSCALER_INTERVAL_S", 30.0, minimum=0.1),
            dry_run=env_bool("AUTOSCALER_DRY_RUN", False),
            run_dir=Path(env_str("AUTOSCALER_RUN_DIR") or data_dir / "run" / "autoscaler"),
            do_token=env_secret("AUTOSCALER_DO_TOKEN").strip(),
            do_api_url=env_url("AUTOSCALER_DO_API_URL"),
            do_region=env_str("AUTOSCALER_DO_REGION", cls.do_region),
            do_size=env_str("AUTOSCALER_DO_SIZE", cls.do_size),
            do_image=env_str("AUTOSCALER_DO_IMAGE", cls.do_image),
            do_vpc_uuid=env_str("AUTOSCALER_DO_VPC_UUID"),
            do_tag=env_str("AUTOSCALER_DO_TAG", cls.do_tag),
            do_ssh_keys=tuple(env_list("AUTOSCALER_DO_SSH_KEYS", [])),
            do_user_data_file=env_str("AUTOSCALER_DO_USER_DATA_FILE"),
            join_key=env_secret("AUTOSCALER_JOIN_KEY").strip(),
        )


@once_per_environment(VARIABLES)
def autoscaler_settings() -> AutoscalerSettings:
    """The settings of this process's environment, built once (again only when a variable changes)."""
    return AutoscalerSettings.from_env()
