"""terraform/: parsed with python-hcl2 and checked as a specification; cloud-init templates render."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import hcl2
import pytest
import yaml
from deploy_helpers import REPO

TF = REPO / "terraform"
PUBLIC = {"0.0.0.0/0", "::/0"}


def clean(value: Any) -> Any:
    """python-hcl2 keeps quotes around literal keys/strings and adds markers; drop both."""
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items() if k not in ("__is_block__", "__comments__")}
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def load(name: str) -> dict[str, Any]:
    with (TF / name).open() as fh:
        return clean(hcl2.load(fh))


def resources() -> dict[tuple[str, str], dict[str, Any]]:
    """(type, name) -> body, over every .tf file."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in TF.glob("*.tf"):
        for block in load(path.name).get("resource", []):
            for rtype, named in block.items():
                for name, body in named.items():
                    found[(rtype, name)] = body
    return found


def inbound_rules(firewall: dict[str, Any]) -> list[dict[str, Any]]:
    """Static inbound_rule blocks plus the content of dynamic "inbound_rule" blocks."""
    rules = list(firewall.get("inbound_rule", []))
    for dynamic in firewall.get("dynamic", []):
        for label, body in dynamic.items():
            if label == "inbound_rule":
                rules.extend(body.get("content", []))
    return rules


def sources(rule: dict[str, Any]) -> set[str]:
    value = rule["source_addresses"]
    return set(value) if isinstance(value, list) else {value}


def test_every_tf_file_parses() -> None:
    files = sorted(p.name for p in TF.glob("*.tf"))
    assert {"main.tf", "variables.tf", "outputs.tf", "versions.tf"} <= set(files)
    for name in files:
        assert isinstance(load(name), dict)


def test_the_deployment_has_a_main_droplet_workers_a_vpc_and_firewalls() -> None:
    found = resources()
    for key in [
        ("digitalocean_vpc", "arena"),
        ("digitalocean_droplet", "main"),
        ("digitalocean_droplet", "worker"),
        ("digitalocean_reserved_ip", "main"),
        ("digitalocean_firewall", "main"),
        ("digitalocean_firewall", "workers"),
    ]:
        assert key in found, key
    worker = found[("digitalocean_droplet", "worker")]
    assert worker["count"] == "${var.worker_count}"
    for name in ("main", "worker"):
        assert found[("digitalocean_droplet", name)]["vpc_uuid"] == "${digitalocean_vpc.arena.id}"
    assert worker["user_data"] == "${local.worker_user_data}"


def test_the_main_firewall_exposes_only_http_and_https_to_the_internet() -> None:
    rules = inbound_rules(resources()[("digitalocean_firewall", "main")])
    public_ports = {rule["port_range"] for rule in rules if sources(rule) & PUBLIC}
    assert public_ports == {"80", "443"}
    by_port = {rule["port_range"]: sources(rule) for rule in rules}
    assert by_port["22"] == {"${var.admin_cidrs}"}
    for private_port in ("5432", "6379", "2049"):
        assert by_port[private_port] == {"${var.vpc_ip_range}"}, private_port
    assert set(by_port) == {"80", "443", "22", "5432", "6379", "2049"}


def test_workers_accept_nothing_but_ssh_from_the_admin_addresses() -> None:
    firewall = resources()[("digitalocean_firewall", "workers")]
    rules = inbound_rules(firewall)
    assert [(rule["port_range"], sources(rule)) for rule in rules] == [("22", {"${var.admin_cidrs}"})]
    # Tagged, so droplets the autoscaler adds are covered too.
    assert set(firewall["tags"]) == {"${digitalocean_tag.worker.id}", "${digitalocean_tag.auto_worker.id}"}


def test_ssh_cannot_be_opened_to_the_whole_internet() -> None:
    variables = {k: v for block in load("variables.tf")["variable"] for k, v in block.items()}
    validation = variables["admin_cidrs"]["validation"][0]
    assert "0.0.0.0/0" in validation["condition"] and "::/0" in validation["condition"]


def test_every_variable_and_output_is_documented() -> None:
    variables = {k: v for block in load("variables.tf")["variable"] for k, v in block.items()}
    outputs = {k: v for block in load("outputs.tf")["output"] for k, v in block.items()}
    for name, body in {**variables, **outputs}.items():
        assert body.get("description"), name
    assert variables["do_token"]["sensitive"] is True
    assert {"worker_count", "admin_cidrs", "region", "repo_ref"} <= set(variables)
    assert {"main_public_ip", "main_private_ip", "worker_private_ips", "url"} <= set(outputs)


# --- cloud-init --------------------------------------------------------------------------------------------


def render(template: Path, values: dict[str, Any]) -> str:
    """Terraform's template interpolation for the subset the templates use: ${name} and the $${ escape."""
    text = template.read_text()
    assert "%{" not in text, "directives are not supported by this renderer; keep templates to ${name}"
    used = set(re.findall(r"(?<!\$)\$\{([^}]*)\}", text))
    assert used <= set(values), f"template uses unknown variables: {used - set(values)}"

    def value(match: re.Match[str]) -> str:
        found = values[match[1]]
        return str(found).lower() if isinstance(found, bool) else str(found)

    rendered = re.sub(r"(?<!\$)\$\{(\w+)\}", value, text)
    return rendered.replace("$${", "${")


def templatefile_keys(hcl_expression: str) -> set[str]:
    """The keys of the object literal(s) passed to templatefile() in an expression."""
    return set(re.findall(r"[{,]\s*(\w+) = ", hcl_expression))


WORKER_VALUES: dict[str, Any] = {
    "repo_url": "https://example.org/rl-arena.git",
    "repo_ref": "v1.2.3",
    "main_private_ip": "10.42.0.5",
    "postgres_password": "pg-pass",
    "redis_password": "redis-pass",
    "secret_key": "k" * 64,
    "worker_concurrency": 3,
    "agent_image_repository": "registry.example.org/arena/agent",
}


def main_values(worker_user_data: str) -> dict[str, Any]:
    return {
        "repo_url": "https://example.org/rl-arena.git",
        "repo_ref": "v1.2.3",
        "vpc_ip_range": "10.42.0.0/20",
        "postgres_password": "pg-pass",
        "redis_password": "redis-pass",
        "secret_key": "k" * 64,
        "domain": "arena.example.org",
        "main_worker_count": 0,
        "worker_concurrency": 3,
        "agent_image_repository": "registry.example.org/arena/agent",
        "autoscaler_enabled": True,
        "worker_user_data_b64": base64.b64encode(worker_user_data.encode()).decode(),
        "autoscaler_env": "AUTOSCALER_DO_TOKEN=t\n      AUTOSCALER_MAX_WORKERS=5",
    }


def write_files(document: dict[str, Any]) -> dict[str, str]:
    return {item["path"]: item["content"] for item in document["write_files"]}


def test_main_tf_passes_exactly_the_variables_each_template_uses() -> None:
    main_tf = {k: v for block in load("main.tf")["locals"] for k, v in block.items()}
    droplet = resources()[("digitalocean_droplet", "main")]
    main_keys = templatefile_keys(droplet["user_data"])
    worker_keys = set(main_tf["worker_template_vars"]) | templatefile_keys(main_tf["worker_user_data"])
    for template, keys in (("main.yaml.tftpl", main_keys), ("worker.yaml.tftpl", worker_keys)):
        used = set(re.findall(r"(?<!\$)\$\{(\w+)\}", (TF / "cloud-init" / template).read_text()))
        assert used == keys, template


def test_the_worker_cloud_init_renders_and_joins_the_main_droplet(tmp_path: Path) -> None:
    text = render(TF / "cloud-init" / "worker.yaml.tftpl", WORKER_VALUES)
    assert text.startswith("#cloud-config\n")
    document = yaml.safe_load(text)
    assert "docker.io" in document["packages"]
    files = write_files(document)
    env = files["/opt/rl-arena/worker.env"]
    assert "DATABASE_URL=postgres://arena:pg-pass@10.42.0.5:5432/arena" in env
    assert "CELERY_BROKER_URL=redis://:redis-pass@10.42.0.5:6379/0" in env
    assert "SANDBOX=docker" in env
    script = files["/opt/rl-arena/bootstrap-worker.sh"]
    assert "/var/run/docker.sock:/var/run/docker.sock" in script
    assert "celery -A core worker" in script
    (tmp_path / "bootstrap.sh").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "bootstrap.sh")], capture_output=True).returncode == 0


def test_the_main_cloud_init_renders_and_starts_the_stack(tmp_path: Path) -> None:
    worker = render(
        TF / "cloud-init" / "worker.yaml.tftpl", {**WORKER_VALUES, "main_private_ip": "__MAIN_PRIVATE_IP__"}
    )
    text = render(TF / "cloud-init" / "main.yaml.tftpl", main_values(worker))
    document = yaml.safe_load(text)
    files = write_files(document)
    platform_env = files["/opt/rl-arena/platform.env"]
    assert "POSTGRES_PASSWORD=pg-pass" in platform_env
    assert "AUTOSCALER_MAX_WORKERS=5" in platform_env.splitlines()
    assert base64.b64decode(files["/opt/rl-arena/worker-cloud-init.b64"]).decode() == worker
    script = files["/opt/rl-arena/bootstrap-main.sh"]
    assert "docker compose" in script and "--wait" in script
    assert "${profiles[@]}" in script  # the $${ escape became a shell expansion
    (tmp_path / "bootstrap.sh").write_text(script)
    done = subprocess.run(["bash", "-n", str(tmp_path / "bootstrap.sh")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


TERRAFORM = shutil.which("terraform")


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary (optional cross-check)")
def test_terraform_itself_renders_the_templates_the_same_way(tmp_path: Path) -> None:
    values = ", ".join(
        f"{k} = {v if isinstance(v, int) else repr(v).replace(chr(39), chr(34))}"
        for k, v in WORKER_VALUES.items()
    )
    expression = f'templatefile("{TF / "cloud-init" / "worker.yaml.tftpl"}", {{{values}}})'
    done = subprocess.run(
        [TERRAFORM, "console"], input=f"base64encode({expression})\n", cwd=tmp_path,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rendered = base64.b64decode(done.stdout.strip().strip('"')).decode()
    assert rendered == render(TF / "cloud-init" / "worker.yaml.tftpl", WORKER_VALUES)


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary (optional check)")
def test_the_terraform_files_are_formatted() -> None:
    done = subprocess.run(
        [TERRAFORM, "fmt", "-check", "-diff", str(TF)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout
