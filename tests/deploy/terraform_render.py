"""Terraform's template interpolation for the subset the cloud-init templates use, and sample values.

Shared by test_terraform.py (the templates render into valid cloud-init) and the autoscaler tests (the
autoscaler boots droplets with the workers' template as the main droplet stores it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from deploy_helpers import REPO

TF = REPO / "terraform"
WORKER_TEMPLATE = TF / "cloud-init" / "worker.yaml.tftpl"
MAIN_TEMPLATE = TF / "cloud-init" / "main.yaml.tftpl"


def render(template: Path, values: dict[str, Any]) -> str:
    """``${name}`` interpolation and the ``$${`` escape (what terraform's templatefile does for them)."""
    text = template.read_text()
    assert "%{" not in text, "directives are not supported by this renderer; keep templates to ${name}"
    used = set(re.findall(r"(?<!\$)\$\{([^}]*)\}", text))
    assert used <= set(values), f"template uses unknown variables: {used - set(values)}"

    def value(match: re.Match[str]) -> str:
        found = values[match[1]]
        return str(found).lower() if isinstance(found, bool) else str(found)

    rendered = re.sub(r"(?<!\$)\$\{(\w+)\}", value, text)
    return rendered.replace("$${", "${")


def template_variables(template: Path) -> set[str]:
    """The ``${name}`` variables a template uses."""
    return set(re.findall(r"(?<!\$)\$\{(\w+)\}", template.read_text()))


WORKER_VALUES: dict[str, Any] = {
    "repo_url": "https://example.org/rl-arena.git",
    "repo_ref": "v1.2.3",
    "main_private_ip": "10.42.0.5",
    "worker_concurrency": 3,
    "vpc_ip_range": "10.42.0.0/20",
    "join_port": 8471,
    "worker_name": "rl-arena-worker-1",
    "join_ticket": "rl-arena-worker-1." + "ab" * 16 + "." + "c" * 64,
}

#: The placeholders main.tf puts in the autoscaler's copy of the workers' cloud-init.
AUTOSCALER_PLACEHOLDERS = {
    "main_private_ip": "__MAIN_PRIVATE_IP__",
    "worker_name": "__WORKER_NAME__",
    "join_ticket": "__JOIN_TICKET__",
}


def autoscaler_worker_template(main_private_ip: str = "10.42.0.5") -> str:
    """The workers' cloud-init as the autoscaler reads it on the main droplet (its address filled in)."""
    text = render(WORKER_TEMPLATE, {**WORKER_VALUES, **AUTOSCALER_PLACEHOLDERS})
    return text.replace("__MAIN_PRIVATE_IP__", main_private_ip)
