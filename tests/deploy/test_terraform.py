"""terraform/: parsed with python-hcl2 and checked as a specification; cloud-init templates render."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import hcl2
import pytest
import yaml
from deploy_helpers import free_port, require, wait_for_http
from terraform_render import (
    AUTOSCALER_PLACEHOLDERS,
    MAIN_TEMPLATE,
    TF,
    WORKER_TEMPLATE,
    WORKER_VALUES,
    render,
    template_variables,
)

from autoscaler.join import make_ticket

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
    assert worker["user_data"] == "${local.worker_user_data[count.index]}"
    assert worker["name"] == "${local.worker_names[count.index]}"


def test_the_main_firewall_exposes_only_http_and_https_to_the_internet() -> None:
    rules = inbound_rules(resources()[("digitalocean_firewall", "main")])
    public_ports = {rule["port_range"] for rule in rules if sources(rule) & PUBLIC}
    assert public_ports == {"80", "443"}
    by_port = {rule["port_range"]: sources(rule) for rule in rules}
    assert by_port["22"] == {"${var.admin_cidrs}"}
    # Postgres, Redis, the agent registry and the join service: the private network only. No NFS (2049):
    # workers share no disk with the main droplet.
    for private_port in ("5432", "6379", "5000", "${tostring(var.join_port)}"):
        assert by_port[private_port] == {"${var.vpc_ip_range}"}, private_port
    assert set(by_port) == {"80", "443", "22", "5432", "6379", "5000", "${tostring(var.join_port)}"}


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


# --- the secret property of the workers' user-data --------------------------------------------------------
#: Values only the main droplet may know; none may reach a worker's user-data (metadata service).
MAIN_SECRETS = {
    "postgres_password": "SENTINEL-PG-PASSWORD",
    "redis_password": "SENTINEL-REDIS-PASSWORD",
    "secret_key": "SENTINEL-SECRET-KEY-" + "s" * 44,
    "join_key": "SENTINEL-JOIN-KEY-" + "j" * 46,
    "agent_registry_password": "SENTINEL-REGISTRY-PASSWORD",
}
#: Terraform values that are secret: none may be referenced by a worker's user-data, except the join key
#: inside sha256() (the ticket's mac).
SECRET_REFERENCES = {
    "random_password.postgres",
    "random_password.redis",
    "random_password.secret_key",
    "var.do_token",
    "var.agent_registry_password",
    "var.agent_registry_username",
}


def locals_of_main() -> dict[str, Any]:
    return {k: v for block in load("main.tf")["locals"] for k, v in block.items()}


def references(expression: Any, all_locals: dict[str, Any], seen: set[str] | None = None) -> set[str]:
    """Every ``var.``/``random_*.``/resource reference an expression depends on, through locals."""
    seen = set() if seen is None else seen
    text = str(expression)
    found = set(re.findall(r"\b((?:var|random_password|random_id|digitalocean_\w+)\.\w+)", text))
    for name in re.findall(r"\blocal\.(\w+)", text):
        if name not in seen:
            seen.add(name)
            found |= references(all_locals[name], all_locals, seen)
    return found


def strip_sha256(text: str) -> str:
    """``text`` without its ``sha256(...)`` calls (balanced parentheses)."""
    while (start := text.find("sha256(")) >= 0:
        depth, end = 0, start + len("sha256")
        for end in range(start + len("sha256"), len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        text = text[:start] + "HASHED" + text[end + 1 :]
    return text


def test_worker_user_data_references_no_database_redis_registry_secret_nor_secret_key() -> None:
    """HCL: what terraform's workers (and the autoscaler's copy) are booted with depends on no secret."""
    all_locals = locals_of_main()
    for name in ("worker_user_data", "worker_user_data_for_autoscaler"):
        used = references(all_locals[name], all_locals)
        assert not used & SECRET_REFERENCES, (name, used & SECRET_REFERENCES)
    # The join key reaches a worker only hashed: the ticket's mac.
    tickets = str(all_locals["worker_join_tickets"])
    assert "random_password.join_key" in tickets
    assert "random_password.join_key" not in strip_sha256(tickets)
    for name in ("worker_user_data", "worker_template_vars", "worker_user_data_for_autoscaler"):
        assert "random_password.join_key" not in str(all_locals[name])
    # The worker template's variables: none is a password, key or token (the ticket is single-use).
    assert not {v for v in template_variables(WORKER_TEMPLATE) if re.search("password|secret|token|key", v)}


def test_no_main_secret_reaches_a_worker_user_data_nor_the_autoscaler_copy() -> None:
    """Rendered: sentinel secrets given to the main droplet appear in no worker cloud-init."""
    worker = render(WORKER_TEMPLATE, WORKER_VALUES)
    for_autoscaler = render(WORKER_TEMPLATE, {**WORKER_VALUES, **AUTOSCALER_PLACEHOLDERS})
    main = render(MAIN_TEMPLATE, main_values(for_autoscaler))
    stored = base64.b64decode(
        write_files(yaml.safe_load(main))["/opt/rl-arena/worker-cloud-init.b64"]
    ).decode()
    for text in (worker, for_autoscaler, stored):
        for secret in MAIN_SECRETS.values():
            assert secret not in text
        for forbidden in ("DATABASE_URL=", "SECRET_KEY=", "REDIS_URL=", "CELERY_BROKER_URL=", "PASSWORD="):
            assert forbidden not in text, forbidden
    # ... while the main droplet has them (the check above could otherwise pass vacuously).
    for secret in MAIN_SECRETS.values():
        assert secret in main


# --- cloud-init -------------------------------------------------------------------------------------------
def templatefile_keys(hcl_expression: str) -> set[str]:
    """The keys of the object literal(s) passed to templatefile() in an expression."""
    return set(re.findall(r"[{,]\s*(\w+) = ", hcl_expression))


def main_values(worker_user_data: str) -> dict[str, Any]:
    return {
        "repo_url": "https://example.org/rl-arena.git",
        "repo_ref": "v1.2.3",
        "vpc_ip_range": "10.42.0.0/20",
        **{k: v for k, v in MAIN_SECRETS.items() if k != "agent_registry_password"},
        "join_port": 8471,
        "domain": "arena.example.org",
        "main_worker_count": 0,
        "worker_concurrency": 3,
        "agent_registry": "",
        "agent_registry_username": "",
        "agent_registry_password": MAIN_SECRETS["agent_registry_password"],
        "autoscaler_enabled": True,
        "worker_user_data_b64": base64.b64encode(worker_user_data.encode()).decode(),
        "autoscaler_env": "AUTOSCALER_DO_TOKEN=t\n      AUTOSCALER_MAX_WORKERS=5",
    }


def write_files(document: dict[str, Any]) -> dict[str, str]:
    return {item["path"]: item["content"] for item in document["write_files"]}


def test_main_tf_passes_exactly_the_variables_each_template_uses() -> None:
    all_locals = locals_of_main()
    droplet = resources()[("digitalocean_droplet", "main")]
    main_keys = templatefile_keys(droplet["user_data"])
    for local in ("worker_user_data", "worker_user_data_for_autoscaler"):
        keys = set(all_locals["worker_template_vars"]) | templatefile_keys(all_locals[local])
        assert template_variables(WORKER_TEMPLATE) == keys, local
    assert template_variables(MAIN_TEMPLATE) == main_keys


def test_the_worker_cloud_init_renders_joins_with_its_ticket_and_contains_its_containers(
    tmp_path: Path,
) -> None:
    text = render(WORKER_TEMPLATE, WORKER_VALUES)
    assert text.startswith("#cloud-config\n")
    document = yaml.safe_load(text)
    assert {"docker.io", "python3", "iptables"} <= set(document["packages"])
    files = write_files(document)
    assert files["/opt/rl-arena/join.ticket"].strip() == WORKER_VALUES["join_ticket"]
    assert "SANDBOX=docker" in files["/opt/rl-arena/worker-base.env"]
    script = files["/opt/rl-arena/bootstrap-worker.sh"]
    assert 'python3 -m autoscaler.join fetch --main "http://$MAIN:8471"' in script
    # The containment comes first, the worker container last and on the host network.
    assert (
        script.index("contain-agents.sh") < script.index("autoscaler.join fetch") < script.index("docker run")
    )
    assert "--network host" in script and "/var/run/docker.sock:/var/run/docker.sock" in script
    assert "celery -A core worker" in script
    # No shared disk: uploads come from the database's upload store; DATA_DIR is the worker's own folder.
    assert "nfs" not in text.lower() and "mount " not in script
    assert "-v /var/lib/rl-arena/data:/data" in script
    unit = files["/etc/systemd/system/rl-arena-contain-agents.service"]
    assert "Before=docker.service" in unit and "RequiredBy=docker.service" in unit
    for name in ("bootstrap-worker.sh", "contain-agents.sh"):
        (tmp_path / name).write_text(files[f"/opt/rl-arena/{name}"])
        done = subprocess.run(["bash", "-n", str(tmp_path / name)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_the_main_cloud_init_renders_and_starts_the_stack_the_registry_and_the_join_service(
    tmp_path: Path,
) -> None:
    worker = render(WORKER_TEMPLATE, {**WORKER_VALUES, **AUTOSCALER_PLACEHOLDERS})
    text = render(MAIN_TEMPLATE, main_values(worker))
    document = yaml.safe_load(text)
    assert {"docker-registry", "python3", "iptables"} <= set(document["packages"])
    files = write_files(document)
    platform_env = files["/opt/rl-arena/platform.env"]
    assert f"POSTGRES_PASSWORD={MAIN_SECRETS['postgres_password']}" in platform_env
    assert "AUTOSCALER_MAX_WORKERS=5" in platform_env.splitlines()
    assert files["/opt/rl-arena/join.key"].strip() == MAIN_SECRETS["join_key"]
    assert base64.b64decode(files["/opt/rl-arena/worker-cloud-init.b64"]).decode() == worker
    script = files["/opt/rl-arena/bootstrap-main.sh"]
    assert "docker compose" in script and "--wait" in script
    assert "${profiles[@]}" in script  # the $${ escape became a shell expansion
    assert "terraform/scripts/setup-registry.sh" in script
    assert "python3 -m autoscaler.join serve --bind $PRIVATE_IP:$JOIN_PORT" in script
    assert script.index("contain-agents.sh") < script.index("docker compose")
    # Prometheus and Alertmanager run beside the stack, scraping /metrics with a token made once.
    assert "profiles=(--profile monitoring)" in script
    assert script.index("metrics_token") < script.index('echo "METRICS_TOKEN=$METRICS_TOKEN"')
    # Nothing is exported to the workers: they share no disk with this droplet.
    assert "nfs" not in script.lower() and "exportfs" not in script
    assert not [p for p in document["packages"] if "nfs" in p]
    for name in ("bootstrap-main.sh", "contain-agents.sh"):
        (tmp_path / name).write_text(files[f"/opt/rl-arena/{name}"])
        done = subprocess.run(["bash", "-n", str(tmp_path / name)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_the_containment_rules_load_into_iptables_once(tmp_path: Path) -> None:
    """contain-agents.sh in a network namespace of its own (this machine's rules are never touched)."""
    require(os.geteuid() == 0 and shutil.which("unshare") is not None, "needs root and unshare")
    require(shutil.which("iptables") is not None, "iptables is not installed")
    script = write_files(yaml.safe_load(render(WORKER_TEMPLATE, WORKER_VALUES)))[
        "/opt/rl-arena/contain-agents.sh"
    ]
    (tmp_path / "contain.sh").write_text(script)
    done = subprocess.run(
        ["unshare", "--net", "bash", "-c",
         f"bash {tmp_path / 'contain.sh'} && bash {tmp_path / 'contain.sh'} && iptables -w -S DOCKER-USER"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rules = [line for line in done.stdout.splitlines() if line.startswith("-A DOCKER-USER")]
    assert len(rules) == 2, rules  # idempotent: a second run adds nothing
    assert any("-d 169.254.169.254/32" in r and "REJECT" in r for r in rules)
    assert any("-d 10.42.0.0/20" in r and "NEW" in r and "REJECT" in r for r in rules)


def test_the_main_droplet_registry_wants_its_password(tmp_path: Path, services: list) -> None:
    """setup-registry.sh configures Debian's Distribution registry; the real binary then enforces it."""
    from deploy_helpers import Service

    registry = shutil.which("docker-registry")
    require(registry is not None, "docker-registry is not installed (scripts/ensure_registry.sh --install)")
    port = free_port()
    env = {**os.environ, "CONFIG": str(tmp_path / "config.yml"), "STORAGE": str(tmp_path / "data"),
           "REGISTRY_SERVICE": "none"}  # fmt: skip
    done = subprocess.run(
        ["bash", str(TF / "scripts" / "setup-registry.sh"), f"127.0.0.1:{port}", str(tmp_path / "state")],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    settings = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert settings["AGENT_REGISTRY"] == f"http://127.0.0.1:{port}/rl-arena"
    password = settings["AGENT_REGISTRY_PASSWORD"]
    assert len(password) >= 32 and password == (tmp_path / "state" / "password").read_text()
    again = subprocess.run(
        ["bash", str(TF / "scripts" / "setup-registry.sh"), f"127.0.0.1:{port}", str(tmp_path / "state")],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert f"AGENT_REGISTRY_PASSWORD={password}" in again.stdout  # made once, kept
    assert registry is not None
    services.append(Service([registry, "serve", str(tmp_path / "config.yml")], log=tmp_path / "registry.log"))
    url = f"http://127.0.0.1:{port}/v2/"
    assert wait_for_http(url, timeout_s=60) == 401
    from run_duel.registry import RegistryConfig

    good = RegistryConfig.parse(settings["AGENT_REGISTRY"], username="arena", password=password)
    bad = RegistryConfig.parse(settings["AGENT_REGISTRY"], username="arena", password="wrong-password")
    assert good._request("GET", "/v2/", timeout=10) == 200
    assert bad._request("GET", "/v2/", timeout=10) == 401


# --- terraform itself (a binary is at /usr/local/bin/terraform here; the providers are not) ---------------
TERRAFORM = shutil.which("terraform")


def terraform(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TF_IN_AUTOMATION": "1", "CHECKPOINT_DISABLE": "1"}
    return subprocess.run([TERRAFORM or "terraform", *args], input=stdin, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary (optional cross-check)")
def test_terraform_itself_renders_the_templates_the_same_way(tmp_path: Path) -> None:
    values = ", ".join(
        f"{k} = {v if isinstance(v, int) else repr(v).replace(chr(39), chr(34))}"
        for k, v in WORKER_VALUES.items()
    )
    expression = f'templatefile("{WORKER_TEMPLATE}", {{{values}}})'
    done = terraform("console", cwd=tmp_path, stdin=f"base64encode({expression})\n")
    assert done.returncode == 0, done.stderr
    rendered = base64.b64decode(done.stdout.strip().strip('"')).decode()
    assert rendered == render(WORKER_TEMPLATE, WORKER_VALUES)


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary (optional cross-check)")
def test_terraform_mints_the_same_join_tickets_as_the_join_service(tmp_path: Path) -> None:
    """main.tf's ticket expression, evaluated by terraform, is accepted by autoscaler.join."""
    expression = locals_of_main()["worker_join_tickets"].removeprefix("${").removesuffix("}")
    key, nonce, names = "K" * 64, "0123456789abcdef" * 2, ["rl-arena-worker-1", "rl-arena-worker-2"]
    expression = (
        expression.replace("random_password.join_key.result", f'"{key}"')
        .replace("random_id.worker_join[i].hex", f'"{nonce}"')
        .replace("local.worker_names", "[" + ", ".join(f'"{n}"' for n in names) + "]")
    )
    done = terraform("console", cwd=tmp_path, stdin=f"jsonencode({expression})\n")
    assert done.returncode == 0, done.stderr
    import json

    minted = json.loads(json.loads(done.stdout.strip()))
    assert minted == [make_ticket(key, name, nonce) for name in names]


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary (optional check)")
def test_the_terraform_files_are_formatted() -> None:
    done = terraform("fmt", "-check", "-diff", str(TF), cwd=TF)
    assert done.returncode == 0, done.stdout


@pytest.mark.skipif(TERRAFORM is None, reason="no terraform binary")
def test_terraform_validate(tmp_path: Path) -> None:
    """``terraform validate`` needs the providers' schemas, i.e. ``terraform init`` must install them.

    This machine reaches only PyPI, Debian and npm: neither registry.terraform.io nor a provider mirror, and
    no Debian package ships terraform-provider-digitalocean or -random. Then the test skips, quoting
    init's own error; it never passes without validating.
    """
    work = tmp_path / "terraform"
    shutil.copytree(TF, work, ignore=shutil.ignore_patterns(".terraform", "*.tfstate*", "*.tfvars"))
    started = time.monotonic()
    init = terraform("init", "-backend=false", "-input=false", "-no-color", cwd=work)
    if init.returncode != 0:
        reason = " ".join(
            line.strip("│ ").strip() for line in init.stderr.splitlines() if line.strip("│ ").strip()
        )
        reason = reason[reason.find("Error:") :] if "Error:" in reason else reason
        pytest.skip(
            f"terraform init could not install the providers ({time.monotonic() - started:.0f}s): "
            f"{reason[:400]}"
        )
    done = terraform("validate", "-no-color", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


def test_the_autoscaler_copy_needs_a_join_key_to_be_used() -> None:
    """The placeholders the autoscaler fills in are the ones main.tf leaves in its copy."""
    text = render(WORKER_TEMPLATE, {**WORKER_VALUES, **AUTOSCALER_PLACEHOLDERS})
    from autoscaler.providers.digitalocean import NAME_PLACEHOLDER, TICKET_PLACEHOLDER

    assert NAME_PLACEHOLDER in text and TICKET_PLACEHOLDER in text
    assert sys.modules["autoscaler.join"].check_ticket  # the autoscaler mints with the same module
