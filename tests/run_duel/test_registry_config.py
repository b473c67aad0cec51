"""The agent registry settings (``run_duel.registry``) and the image cache budget: parsed, or refused with
a message naming the variable. (The registry itself is exercised in tests/docker/test_registry.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from envsettings import SettingsError
from run_duel.registry import RegistryConfig, RegistryConfigError
from run_duel.sandbox.images import DEFAULT_CACHE_BYTES, cache_budget_from_env, parse_digest_ref

DIGEST = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("value", "host", "prefix", "scheme", "repository"),
    [
        ("127.0.0.1:5000", "127.0.0.1:5000", "", "http", "127.0.0.1:5000/rl-arena-agent"),
        ("localhost:5000/a/b", "localhost:5000", "a/b", "http", "localhost:5000/a/b/rl-arena-agent"),
        ("[::1]:5000", "[::1]:5000", "", "http", "[::1]:5000/rl-arena-agent"),
        ("registry.example.org/arena/", "registry.example.org", "arena", "https", None),
        ("http://10.0.0.2:5000", "10.0.0.2:5000", "", "http", "10.0.0.2:5000/rl-arena-agent"),
        ("https://127.0.0.1:5443", "127.0.0.1:5443", "", "https", None),
    ],
)
def test_registry_addresses_parse(
    value: str, host: str, prefix: str, scheme: str, repository: str | None
) -> None:
    config = RegistryConfig.parse(value)
    assert (config.host, config.prefix, config.scheme) == (host, prefix, scheme)
    assert config.base_url == f"{scheme}://{host}"
    if repository:
        assert config.repository("rl-arena-agent") == repository


@pytest.mark.parametrize(
    "value", ["", "http://", "registry.example.org/UPPER", "a b:5000", "reg.io:99999", "registry/arena"]
)
def test_bad_registry_addresses_are_refused_naming_the_variable(value: str) -> None:
    with pytest.raises(RegistryConfigError, match="AGENT_REGISTRY"):
        RegistryConfig.parse(value)


def test_credentials_come_in_pairs_and_the_password_from_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(RegistryConfigError, match="AGENT_REGISTRY_USERNAME and AGENT_REGISTRY_PASSWORD"):
        RegistryConfig.parse("127.0.0.1:5000", username="arena")
    secret = tmp_path / "password"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("AGENT_REGISTRY", "127.0.0.1:5000")
    monkeypatch.setenv("AGENT_REGISTRY_USERNAME", "arena")
    monkeypatch.setenv("AGENT_REGISTRY_PASSWORD_FILE", str(secret))
    monkeypatch.delenv("AGENT_REGISTRY_PASSWORD", raising=False)
    config = RegistryConfig.from_env()
    assert config is not None and (config.username, config.password) == ("arena", "s3cret")
    assert config.auth_config() == {
        "username": "arena",
        "password": "s3cret",
        "serveraddress": "127.0.0.1:5000",
    }
    monkeypatch.setenv("AGENT_REGISTRY_PASSWORD", "other")
    with pytest.raises(SettingsError, match="not both"):
        RegistryConfig.from_env()


def test_no_registry_and_an_api_url_for_containers(monkeypatch: pytest.MonkeyPatch) -> None:
    for nothing in (" ", "none", "None"):
        monkeypatch.setenv("AGENT_REGISTRY", nothing)
        assert RegistryConfig.from_env() is None
    monkeypatch.setenv("AGENT_REGISTRY", "127.0.0.1:5000")
    monkeypatch.setenv("AGENT_REGISTRY_API_URL", "http://registry:5000/")
    config = RegistryConfig.from_env()
    assert config is not None
    assert (config.base_url, config.repository("x")) == ("http://registry:5000", "127.0.0.1:5000/x")
    monkeypatch.setenv("AGENT_REGISTRY_API_URL", "registry.example.org/arena")  # the same form; path ignored
    assert RegistryConfig.from_env().base_url == "https://registry.example.org"  # type: ignore[union-attr]
    monkeypatch.setenv("AGENT_REGISTRY_API_URL", "registry")
    with pytest.raises(RegistryConfigError, match="AGENT_REGISTRY_API_URL"):
        RegistryConfig.from_env()


def test_the_cache_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_IMAGE_CACHE_BYTES", raising=False)
    assert cache_budget_from_env() == DEFAULT_CACHE_BYTES
    monkeypatch.setenv("AGENT_IMAGE_CACHE_BYTES", "0")
    assert cache_budget_from_env() == 0
    for bad in ("-1", "10G"):
        monkeypatch.setenv("AGENT_IMAGE_CACHE_BYTES", bad)
        with pytest.raises(SettingsError, match="AGENT_IMAGE_CACHE_BYTES"):
            cache_budget_from_env()


def test_digest_references() -> None:
    assert parse_digest_ref(f"127.0.0.1:5000/rl-arena-agent@{DIGEST}") == (
        "127.0.0.1:5000/rl-arena-agent",
        DIGEST,
    )
    assert parse_digest_ref("rl-arena-agent:abc") is None
    assert parse_digest_ref(f"repo@{DIGEST[:-1]}") is None
    assert parse_digest_ref(f"repo@{DIGEST.upper()}") is None


def test_the_health_probe_of_the_local_sandbox_and_of_an_unknown_one() -> None:
    from run_duel.health import sandbox_problem

    assert sandbox_problem("local") is None
    assert "unknown sandbox 'kubernetes'" in (sandbox_problem("kubernetes") or "")


def test_a_local_worker_without_bubblewrap_is_unhealthy_unless_unisolated_is_allowed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from run_duel.health import sandbox_problem

    monkeypatch.delenv("SANDBOX_ALLOW_UNISOLATED", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # a host where bwrap is not installed
    assert "bubblewrap (bwrap) is not installed" in (sandbox_problem("local") or "")
    monkeypatch.setenv("SANDBOX_ALLOW_UNISOLATED", "1")
    assert sandbox_problem("local") is None
