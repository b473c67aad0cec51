"""Agent images through a real registry (Debian's Distribution) and the real Docker engine: the builder
pushes and records a digest, workers pull what they lack (once per host), the cache stays within its
budget, and every registry failure ends typed, with a reason, as infrastructure.

Each test gets its own registry process (``registry_support.PrivateRegistry``) and its own image
repository name, so stopping, tampering with or emptying a registry, and trimming the cache, never touch
another test's images on this shared engine."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker.errors import NotFound
from dockertest_support import RANDOM_PLAYER, REPO
from registry_support import PrivateRegistry

from builder import BuildResult, build_submission
from builder.settings import BuilderSettings
from run_duel.api import LaunchSpec, SandboxError, play_duel
from run_duel.registry import RegistryConfig
from run_duel.sandbox.docker import DockerSandbox
from run_duel.sandbox.docker_client import get_client
from run_duel.sandbox.images import (
    ImageCache,
    ImageDigestMismatch,
    ImageMissing,
    ImageUnavailable,
    ensure_images,
    parse_digest_ref,
)

pytestmark = pytest.mark.docker

DIGEST_REF = re.compile(r"^127\.0\.0\.1:\d+/rl-arena-regtest-[0-9a-f]{8}@sha256:[0-9a-f]{64}$")


@pytest.fixture
def repository() -> Iterator[str]:
    """A repository name of this test alone; every image carrying it is removed afterwards."""
    name = f"rl-arena-regtest-{uuid.uuid4().hex[:8]}"
    yield name
    api = get_client().api
    for image in api.images(filters={"label": "rl-arena=agent-image"}):
        names = [*(image.get("RepoTags") or []), *(image.get("RepoDigests") or [])]
        for ref in names:
            if name in ref:
                with contextlib.suppress(Exception):
                    api.remove_image(ref, force=True)


@pytest.fixture
def registry(tmp_path: Path, docker_engine: None) -> Iterator[PrivateRegistry]:
    reg = PrivateRegistry(tmp_path / "registry").start()
    yield reg
    reg.stop()


@pytest.fixture
def cache(registry: PrivateRegistry, tmp_path: Path) -> ImageCache:
    """An image cache talking to this test's registry, its lock files in this test's folder."""
    return ImageCache(
        registry=RegistryConfig.parse(registry.address), budget_bytes=0, lock_dir=tmp_path / "locks"
    )


def build(
    base_image: str,
    tmp_path: Path,
    repository: str,
    registry: RegistryConfig | None,
    *,
    padding_bytes: int = 0,
) -> BuildResult:
    """Build the random example player with unique content (a marker file, optionally padded with
    incompressible bytes so a pull takes a while) and push it to ``registry``."""
    archive = tmp_path / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in RANDOM_PLAYER.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                zf.write(path, path.relative_to(RANDOM_PLAYER).as_posix())
        zf.writestr("marker.txt", uuid.uuid4().hex)
        if padding_bytes:
            zf.writestr("padding.bin", os.urandom(padding_bytes))
    settings = dataclasses.replace(BuilderSettings.from_env(), image_repository=repository)
    return build_submission(
        archive, backend="docker", work_dir=tmp_path, settings=settings, registry=registry
    )


def htpasswd_file(folder: Path, user: str, password: str) -> Path:
    """An htpasswd file (bcrypt, what Distribution accepts) with one user."""
    path = folder / "htpasswd"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the crypt module: fine on Python 3.11
        import crypt

        path.write_text(f"{user}:{crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH))}\n")
    return path


def short_runtime_dir(tmp_path: Path) -> Path:
    """A runtime folder with a short path (Unix socket paths are limited to 107 bytes), removed with
    ``tmp_path``'s test through a link kept there."""
    folder = Path(tempfile.mkdtemp(prefix="rlreg-"))
    (tmp_path / "runtime-link").symlink_to(folder)
    return folder


def remove_from_engine(ref: str) -> None:
    """Remove every name of the image ``ref`` from the engine (what a fresh worker machine looks like)."""
    api = get_client().api
    attrs = api.inspect_image(ref)
    for name in [*(attrs.get("RepoTags") or []), *(attrs.get("RepoDigests") or [])]:
        with contextlib.suppress(NotFound):  # the last tag removed takes the digest names along
            api.remove_image(name)
    assert not in_engine(ref)


def in_engine(ref: str) -> bool:
    try:
        get_client().api.inspect_image(ref)
        return True
    except Exception:
        return False


# -- the builder ----------------------------------------------------------------------------------------


def test_the_builder_pushes_every_image_and_records_its_digest(
    base_image: str, tmp_path: Path, repository: str, registry: PrivateRegistry
) -> None:
    config = RegistryConfig.parse(registry.address)
    result = build(base_image, tmp_path, repository, config)
    assert result.ok, result.error
    assert DIGEST_REF.match(result.agent_ref), result.agent_ref
    _repo, digest = parse_digest_ref(result.agent_ref) or ("", "")
    status, headers = registry.manifest(repository, digest)
    assert status == 200 and headers.get("Docker-Content-Digest") == digest
    assert result.agent_ref in get_client().api.inspect_image(result.agent_ref)["RepoDigests"]
    assert f"pushed as {result.agent_ref}" in result.log

    again = build(base_image, tmp_path, repository, config)  # other content: another image, another digest
    assert again.ok and again.agent_ref != result.agent_ref


def test_without_a_registry_images_stay_local_as_before(
    base_image: str, tmp_path: Path, repository: str
) -> None:
    result = build(base_image, tmp_path, repository, None)
    assert result.ok, result.error
    assert result.agent_ref.startswith(f"{repository}:") and "@" not in result.agent_ref


def test_a_registry_that_is_down_or_read_only_fails_the_build_as_infrastructure(
    base_image: str, tmp_path: Path, repository: str, registry: PrivateRegistry
) -> None:
    config = RegistryConfig.parse(registry.address)
    registry.stop()
    down = build(base_image, tmp_path, repository, config)
    assert (down.ok, down.error_kind) == (False, "INFRA")
    assert f"the agent registry http://{registry.address} refused" in down.error, down.error
    assert "connection refused" in down.error, down.error

    registry.start(readonly=True)
    refused = build(base_image, tmp_path, repository, config)
    assert (refused.ok, refused.error_kind) == (False, "INFRA")
    assert f"the agent registry http://{registry.address} refused" in refused.error, refused.error
    assert refused.agent_ref == ""


def test_pushes_and_pulls_use_the_registry_credentials(
    base_image: str, tmp_path: Path, repository: str, docker_engine: None
) -> None:
    reg = PrivateRegistry(
        tmp_path / "auth-registry", htpasswd=htpasswd_file(tmp_path, "arena", "s3cret")
    ).start()
    try:
        anonymous = build(base_image, tmp_path, repository, RegistryConfig.parse(reg.address))
        assert (anonymous.ok, anonymous.error_kind) == (False, "INFRA")
        assert "basic auth" in anonymous.error or "unauthorized" in anonymous.error.lower(), anonymous.error

        config = RegistryConfig.parse(reg.address, username="arena", password="s3cret")
        result = build(base_image, tmp_path, repository, config)
        assert result.ok, result.error
        remove_from_engine(result.agent_ref)
        cache = ImageCache(registry=config, budget_bytes=0, lock_dir=tmp_path / "locks")
        assert cache.ensure(result.agent_ref).pulled
        assert in_engine(result.agent_ref)
    finally:
        reg.stop()


# -- workers fetch what they lack -----------------------------------------------------------------------


def test_an_image_missing_from_the_engine_is_pulled_by_digest_before_the_duel(
    base_image: str, tmp_path: Path, repository: str, registry: PrivateRegistry, cache: ImageCache
) -> None:
    result = build(base_image, tmp_path, repository, RegistryConfig.parse(registry.address))
    assert result.ok, result.error
    remove_from_engine(result.agent_ref)

    sandbox = DockerSandbox(runtime_dir=short_runtime_dir(tmp_path), images=cache)
    try:
        spec = LaunchSpec(agent=result.agent_ref, labels={"duel": f"reg-{uuid.uuid4().hex[:8]}"})
        duel = play_duel("connect-four", sandbox, spec, spec, matches=2, record_states=False)
    finally:
        sandbox.close()
    assert [m["result"] for m in duel["matches"]] != [] and all(
        m["result"] in ("PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW") for m in duel["matches"]
    ), duel["matches"][0]["error_msg"]
    assert in_engine(result.agent_ref)
    assert registry.manifest_gets(parse_digest_ref(result.agent_ref)[1]) == 1  # type: ignore[index]


ENSURE_SCRIPT = """
import json, os, sys, time
from pathlib import Path
from run_duel.sandbox.images import ImageCache
from run_duel.registry import RegistryConfig
address, ref, lock_dir, go = sys.argv[1:5]
cache = ImageCache(registry=RegistryConfig.parse(address), budget_bytes=0, lock_dir=Path(lock_dir))
print("ready", flush=True)
deadline = time.monotonic() + 120
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit("no go signal")
    time.sleep(0.005)
print(json.dumps({"pulled": cache.ensure(ref).pulled}), flush=True)
"""


def test_concurrent_duels_on_one_host_pull_an_image_once(
    base_image: str, tmp_path: Path, repository: str, registry: PrivateRegistry
) -> None:
    # Separate processes, like Celery's prefork children. A few MB of incompressible content make the pull
    # last long enough for every process to ask while it runs.
    result = build(
        base_image, tmp_path, repository, RegistryConfig.parse(registry.address), padding_bytes=8 << 20
    )
    assert result.ok, result.error
    remove_from_engine(result.agent_ref)
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [registry.address, result.agent_ref, str(tmp_path / "locks"), str(go)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ENSURE_SCRIPT, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(6)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        go.touch()
        outcomes = []
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-2000:]
            outcomes.append(json.loads(out.strip().splitlines()[-1])["pulled"])
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    assert sorted(outcomes) == [False] * 5 + [True]
    assert registry.manifest_gets(parse_digest_ref(result.agent_ref)[1]) == 1  # type: ignore[index]
    assert in_engine(result.agent_ref)


def test_the_cache_removes_least_recently_used_images_never_one_in_use(
    base_image: str, tmp_path: Path, repository: str, registry: PrivateRegistry, cache: ImageCache
) -> None:
    config = RegistryConfig.parse(registry.address)
    refs = []
    for _ in range(3):
        built = build(base_image, tmp_path, repository, config)
        assert built.ok, built.error
        refs.append(built.agent_ref)
    oldest, middle, newest = refs
    now = time.time()
    for age, ref in ((300, oldest), (200, middle), (100, newest)):
        cache.touch(ref)
        os.utime(cache.lock_path(ref), (now - age, now - age))
    total, images = cache.usage()
    assert len(images) == 3 and total > 0

    # The oldest image runs a container: it stays; the next least recently used goes.
    api = get_client().api
    container = api.create_container(
        oldest, entrypoint=["python3", "-c", "import time; time.sleep(300)"], network_disabled=True
    )
    try:
        api.start(container["Id"])
        cache.budget_bytes = total - 1
        removed = cache.enforce_budget()
        assert len(removed) == 1
        assert (in_engine(oldest), in_engine(middle), in_engine(newest)) == (True, False, True)
    finally:
        api.remove_container(container["Id"], force=True)

    # No container now: the oldest goes before the newest.
    total, _ = cache.usage()
    cache.budget_bytes = total - 1
    assert len(cache.enforce_budget()) == 1
    assert (in_engine(oldest), in_engine(newest)) == (False, True)

    # An image a launch holds (between "it is here" and "its container exists") is never removed.
    with cache.use(newest):
        cache.budget_bytes = 1
        assert cache.enforce_budget() == []
    assert in_engine(newest)
    assert len(cache.enforce_budget()) == 1 and not in_engine(newest)


# -- failures are typed infrastructure ------------------------------------------------------------------


def test_a_manifest_deleted_from_the_registry_is_image_missing(
    base_image: str, tmp_path: Path, repository: str, registry: PrivateRegistry, cache: ImageCache
) -> None:
    result = build(base_image, tmp_path, repository, RegistryConfig.parse(registry.address))
    assert result.ok, result.error
    digest = parse_digest_ref(result.agent_ref)[1]  # type: ignore[index]
    assert registry.delete_manifest(repository, digest) == 202
    remove_from_engine(result.agent_ref)

    with pytest.raises(ImageMissing, match="not in the registry any more") as caught:
        ensure_images([result.agent_ref], cache=cache)
    assert isinstance(caught.value, SandboxError) and not isinstance(caught.value, ImageUnavailable)

    # Through a duel: nobody is charged, every match says why.
    sandbox = DockerSandbox(runtime_dir=short_runtime_dir(tmp_path), images=cache)
    try:
        spec = LaunchSpec(agent=result.agent_ref)
        duel = play_duel("connect-four", sandbox, spec, spec, matches=2, record_states=False)
    finally:
        sandbox.close()
    assert {m["result"] for m in duel["matches"]} == {"OTHER_ERROR"}
    assert "not in the registry any more" in duel["matches"][0]["error_msg"]


def test_a_digest_mismatch_is_refused(
    base_image: str, tmp_path: Path, repository: str, registry: PrivateRegistry, cache: ImageCache
) -> None:
    result = build(base_image, tmp_path, repository, RegistryConfig.parse(registry.address))
    assert result.ok, result.error
    remove_from_engine(result.agent_ref)
    registry.tamper_manifest(parse_digest_ref(result.agent_ref)[1])  # type: ignore[index]

    with pytest.raises(ImageDigestMismatch, match="does not match its digest"):
        cache.ensure(result.agent_ref)
    assert not in_engine(result.agent_ref)


def test_an_unreachable_registry_is_image_unavailable(
    base_image: str, tmp_path: Path, repository: str, registry: PrivateRegistry, cache: ImageCache
) -> None:
    result = build(base_image, tmp_path, repository, RegistryConfig.parse(registry.address))
    assert result.ok, result.error
    remove_from_engine(result.agent_ref)
    registry.stop()
    with pytest.raises(ImageUnavailable, match=registry.address):
        cache.ensure(result.agent_ref)
    registry.start()  # back: the same reference is fetched
    assert cache.ensure(result.agent_ref).pulled


def test_a_local_image_the_engine_lacks_is_image_missing(tmp_path: Path, docker_engine: None) -> None:
    cache = ImageCache(registry=None, lock_dir=tmp_path / "locks")
    with pytest.raises(ImageMissing, match="names no registry digest"):
        cache.ensure(f"rl-arena-agent:never-built-{uuid.uuid4().hex[:8]}")


# -- the health probe -----------------------------------------------------------------------------------


def test_the_health_probe_names_a_registry_that_does_not_answer(
    registry: PrivateRegistry, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from run_duel.health import sandbox_problem

    monkeypatch.setenv("AGENT_REGISTRY", registry.address)
    assert sandbox_problem("docker") is None
    registry.stop()
    problem = sandbox_problem("docker")
    assert problem and registry.address in problem and "does not answer" in problem
    registry.start()
    assert sandbox_problem("docker") is None

    with_auth = PrivateRegistry(
        tmp_path / "auth-registry", htpasswd=htpasswd_file(tmp_path, "a", "b")
    ).start()
    try:
        assert with_auth.status("/v2/") == 401
        monkeypatch.setenv("AGENT_REGISTRY", with_auth.address)
        assert sandbox_problem("docker") is None  # 401: it answers, and wants credentials
    finally:
        with_auth.stop()


def test_the_health_probe_names_an_engine_that_does_not_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from run_duel.health import sandbox_problem

    monkeypatch.delenv("AGENT_REGISTRY", raising=False)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    problem = sandbox_problem("docker")
    assert problem and "Docker engine" in problem and "does not answer" in problem
    assert sandbox_problem("local") is None
    assert "unknown sandbox" in (sandbox_problem("kubernetes") or "")
