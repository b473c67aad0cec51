"""A Python agent's requirements.txt: wheels fetched on the host into the shared cache, installed in the
build without network or index, as the agent user, under limits; everything else refused.

A private package index (a real HTTP server on this machine, PEP 503 layout) serves two small wheels
(``arena-test-pkg`` requires ``arena-test-dep``) and one sdist-only project (``docopt``), so the tests do
not depend on PyPI (the ONNX Runtime test, ``test_trained_onnx.py``, uses PyPI).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import ipaddress
import json
import os
import socket
import tarfile
import threading
import time
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pytest

from agent_uploads.requirements import parse_requirements
from builder import build_submission
from builder.agent_packages import stack_pip_options
from builder.settings import BuilderSettings
from builder.wheels import TargetPlatform, Wheel, WheelCache
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker

PLAYER = """import sys
import arena_test_pkg

print("VALUE", arena_test_pkg.VALUE, arena_test_pkg.__file__, file=sys.stderr)


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
"""


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(name: str, version: str, files: dict[str, str], requires: tuple[str, ...] = ()) -> bytes:
    """A minimal pure-Python wheel (PEP 427) holding ``files``."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    contents = {
        **files,
        f"{dist}/METADATA": metadata,
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(
        f"{path},{_record_hash(text.encode())},{len(text.encode())}\n" for path, text in contents.items()
    )
    contents[f"{dist}/RECORD"] = record + f"{dist}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
    return buffer.getvalue()


def make_sdist(name: str, version: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        data = b"raise SystemExit('this must never run')\n"
        info = tarfile.TarInfo(f"{name}-{version}/setup.py")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Server:
    """A local HTTP server that records every request path."""

    url: str
    requests: list[str] = field(default_factory=list)


def _serve(
    files: dict[str, bytes], host: str = "127.0.0.1"
) -> tuple[Server, http.server.ThreadingHTTPServer]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            server.requests.append(self.path)
            body = files.get(self.path.split("?")[0])
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header(
                "Content-Type", "text/html" if self.path.endswith("/") else "application/octet-stream"
            )
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer((host, 0), Handler)
    server = Server(url=f"http://{host}:{httpd.server_address[1]}")
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return server, httpd


@pytest.fixture(scope="module")
def index() -> Iterator[Server]:
    """A PEP 503 index: arena-test-pkg (a wheel needing arena-test-dep), arena-test-dep, docopt (sdist)."""
    pkg = make_wheel(
        "arena-test-pkg",
        "1.0",
        {"arena_test_pkg/__init__.py": "from arena_test_dep import WORD\nVALUE = 'installed-' + WORD\n"},
        requires=("arena-test-dep>=1",),
    )
    dep = make_wheel("arena-test-dep", "1.0", {"arena_test_dep/__init__.py": "WORD = 'from-the-cache'\n"})
    sdist = make_sdist("docopt", "0.6.2")
    files = {
        "/files/arena_test_pkg-1.0-py3-none-any.whl": pkg,
        "/files/arena_test_dep-1.0-py3-none-any.whl": dep,
        "/files/docopt-0.6.2.tar.gz": sdist,
    }
    pages = {
        "arena-test-pkg": "arena_test_pkg-1.0-py3-none-any.whl",
        "arena-test-dep": "arena_test_dep-1.0-py3-none-any.whl",
        "docopt": "docopt-0.6.2.tar.gz",
    }
    for project, filename in pages.items():
        files[f"/simple/{project}/"] = (
            f'<html><body><a href="/files/{filename}">{filename}</a></body></html>'.encode()
        )
    server, httpd = _serve(files)
    yield server
    httpd.shutdown()


@pytest.fixture
def settings(base_image: str, index: Server, tmp_path: Path) -> BuilderSettings:
    return BuilderSettings(
        base_image=base_image, pip_index_url=f"{index.url}/simple", wheel_cache_dir=tmp_path / "wheels"
    )


def _zip(tmp_path: Path, requirements: str, player: str = PLAYER) -> Path:
    path = tmp_path / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("player.py", f"# {uuid.uuid4()}\n{player}")
        archive.writestr("requirements.txt", requirements)
    return path


@pytest.fixture(scope="module")
def built(base_image: str, index: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """One agent built with ``arena-test-pkg`` from the private index (its dependency comes along)."""
    work = tmp_path_factory.mktemp("packages")
    settings = BuilderSettings(
        base_image=base_image, pip_index_url=f"{index.url}/simple", wheel_cache_dir=work / "wheels"
    )
    result = build_submission(
        _zip(work, "# the agent's one dependency\narena-test-pkg==1.0\n"),
        backend="docker",
        work_dir=work,
        settings=settings,
        registry=None,
    )
    assert result.ok, f"{result.error}\n{result.log[-3000:]}"
    yield result, settings
    get_client().api.remove_image(result.agent_ref, force=True)


def test_requirements_are_installed_from_wheels_and_listed(built) -> None:
    result, _settings = built
    assert result.language == "python"
    assert result.packages == (("arena-test-dep", "1.0"), ("arena-test-pkg", "1.0"))
    assert result.image_size_bytes > 0
    assert "requirements: 2 wheel(s)" in result.log
    assert "installed packages:" in result.log  # the in-build install step ran (and checked its limits)


def test_installed_packages_are_root_owned_read_only_and_importable_by_the_agent(built) -> None:
    result, _settings = built
    output = get_client().containers.run(
        result.agent_ref,
        entrypoint=["sh", "-c"],
        command=[
            "id -u; stat -c '%u %a' /opt/agent-packages/arena_test_pkg/__init__.py; "
            # (not on PYTHONPATH in the image: the harness adds the folder in the agent's process)
            "PYTHONPATH=/opt/agent-packages python3 -c 'import arena_test_pkg; print(arena_test_pkg.VALUE)'; "
            "touch /opt/agent-packages/arena_test_pkg/x 2>/dev/null && echo WRITABLE || echo read-only"
        ],
        network_mode="none",
        remove=True,
    )
    assert output.decode().split() == ["10001", "0", "444", "installed-from-the-cache", "read-only"]


def test_a_resolution_is_reused_from_the_content_addressed_cache_without_the_index(
    built, index: Server
) -> None:
    _result, settings = built
    cache = WheelCache(settings.wheel_cache)
    before = len(index.requests)
    # The platform file is keyed by the base image id; take the one the build probed.
    (platform_file,) = (settings.wheel_cache / "platforms").iterdir()
    target = cache.platform(platform_file.stem, lambda: pytest.fail("the platform was probed again"))
    # As the builder resolves: with the stacks' stub wheels and constraints (builder.stacks).
    find_links, constraints = stack_pip_options(settings, get_client())
    resolution = cache.resolve(
        parse_requirements("arena-test-pkg==1.0\n"),
        target,
        settings,
        find_links=find_links,
        constraints=constraints,
    )
    assert resolution.cached
    assert len(index.requests) == before
    for wheel in resolution.wheels:
        path = cache.wheel_path(wheel)
        assert path.parent.name == hashlib.sha256(path.read_bytes()).hexdigest() == wheel.sha256


def test_an_sdist_only_requirement_is_refused_naming_it(
    settings: BuilderSettings, tmp_path: Path, index: Server
) -> None:
    result = build_submission(
        _zip(tmp_path, "arena-test-pkg==1.0\ndocopt==0.6.2\n"),
        backend="docker",
        work_dir=tmp_path,
        settings=settings,
        registry=None,
    )
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED")
    assert "no wheel of 'docopt" in result.error
    assert "source (sdist)" in result.error
    assert "/files/docopt-0.6.2.tar.gz" not in index.requests  # never even downloaded
    tags = [tag for image in get_client().images.list() for tag in image.tags]
    assert not any(result.content_hash[:20] in tag for tag in tags)


def test_a_package_the_index_does_not_have_is_no_such_package_not_a_source_only_one(
    settings: BuilderSettings, tmp_path: Path, index: Server
) -> None:
    result = build_submission(
        _zip(tmp_path, "arena-test-pkg==1.0\narena-no-such-pkg==2.0\n"),
        backend="docker",
        work_dir=tmp_path,
        settings=settings,
        registry=None,
    )
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED")
    assert "no such package: arena-no-such-pkg" in result.error, result.error
    assert "source (sdist)" not in result.error
    assert "/simple/arena-no-such-pkg/" in index.requests  # the index was asked, and said 404


@pytest.mark.parametrize(
    "line",
    [
        "--index-url {decoy}/simple",
        "--extra-index-url {decoy}/simple",
        "-i {decoy}/simple",
        "--find-links {decoy}/files",
        "arena-test-pkg @ {decoy}/files/arena_test_pkg-1.0-py3-none-any.whl",
        "{decoy}/files/arena_test_pkg-1.0-py3-none-any.whl",
        "-r /etc/passwd",
        "./local_folder",
    ],
)
def test_a_requirements_file_cannot_send_the_host_anywhere_but_the_operators_index(
    settings: BuilderSettings, tmp_path: Path, line: str
) -> None:
    decoy, httpd = _serve({})
    try:
        result = build_submission(
            _zip(tmp_path, "arena-test-pkg==1.0\n" + line.format(decoy=decoy.url) + "\n"),
            backend="docker",
            work_dir=tmp_path,
            settings=settings,
            registry=None,
        )
    finally:
        httpd.shutdown()
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED")
    assert "requirements.txt line 2" in result.error
    assert decoy.requests == []


def test_an_unreachable_index_is_our_problem_not_the_submissions(
    settings: BuilderSettings, tmp_path: Path
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once closed
    result = build_submission(
        _zip(tmp_path, "arena-test-pkg==1.0\n"),
        backend="docker",
        work_dir=tmp_path,
        settings=replace(settings, pip_index_url=f"http://127.0.0.1:{port}/simple"),
        registry=None,
    )
    assert (result.ok, result.error_kind) == (False, "INFRA")


def test_the_installed_packages_limits_are_enforced_in_the_build(built, tmp_path: Path) -> None:
    _result, settings = built
    result = build_submission(
        _zip(tmp_path, "arena-test-pkg==1.0\n"),
        backend="docker",
        work_dir=tmp_path,
        settings=replace(settings, packages_max_files=5),
        registry=None,
    )
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED")
    assert "over this server's limit of 5" in result.error


def test_no_build_step_has_network(base_image: str) -> None:
    """Any RUN step of our builds: a TCP connection to a server listening on every host address fails."""
    from builder.engine import ImageBuildError, run_build

    config = get_client().networks.get("bridge").attrs["IPAM"]["Config"][0]
    # The host's address on the default bridge (the engine leaves Gateway out when it is the default).
    gateway = config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))
    listener = socket.socket()
    listener.bind(("0.0.0.0", 0))  # every address: a bridged container could
    listener.listen(5)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    dockerfile = (
        f'FROM {base_image}\nRUN python3 -c "import socket; '
        f"socket.create_connection(('{gateway}', {port}), timeout=5); print('REACHED', 'HOST')\"\n"
    )
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile.encode())
        tar.addfile(info, io.BytesIO(dockerfile.encode()))
    context.seek(0)
    tag = f"rl-arena-test-network:{uuid.uuid4().hex[:8]}"
    try:
        with pytest.raises(ImageBuildError) as raised:
            run_build(context, tag, BuilderSettings(base_image=base_image))
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    assert "Network is unreachable" in raised.value.log
    assert "REACHED HOST" not in raised.value.log


def test_the_operators_extra_index_is_used_beside_the_main_one(index: Server, tmp_path: Path) -> None:
    """AGENT_PIP_EXTRA_INDEX_URL: a package the main index lacks resolves from the extra one."""
    empty, httpd = _serve({})  # answers 404 to everything: an index without the package
    try:
        settings = BuilderSettings(
            pip_index_url=f"{empty.url}/simple",
            pip_extra_index_url=f"{index.url}/simple",
            wheel_cache_dir=tmp_path / "wheels",
        )
        target = TargetPlatform(
            python="3.11", implementation="cp", abis=("cp311", "none"), platforms=("any",)
        )
        resolution = WheelCache(settings.wheel_cache).resolve(["arena-test-pkg==1.0"], target, settings)
    finally:
        httpd.shutdown()
    assert resolution.packages() == [("arena-test-dep", "1.0"), ("arena-test-pkg", "1.0")]
    assert "/simple/arena-test-pkg/" in empty.requests  # the main index was asked first


def _resolve_in_a_process(cache_dir: str, index_url: str) -> list[tuple[str, str]]:
    settings = BuilderSettings(pip_index_url=index_url, wheel_cache_dir=Path(cache_dir))
    target = TargetPlatform(python="3.11", implementation="cp", abis=("cp311", "none"), platforms=("any",))
    return WheelCache(Path(cache_dir)).resolve(["arena-test-pkg==1.0"], target, settings).packages()


def test_concurrent_builders_share_the_cache_safely(index: Server, tmp_path: Path) -> None:
    """Three processes resolve the same requirements into one cache at once: all succeed, and the cache
    holds each wheel once, intact, under its own hash."""
    from concurrent.futures import ProcessPoolExecutor

    cache_dir = tmp_path / "shared"
    with ProcessPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(_resolve_in_a_process, [str(cache_dir)] * 3, [f"{index.url}/simple"] * 3))
    assert results == [[("arena-test-dep", "1.0"), ("arena-test-pkg", "1.0")]] * 3
    wheels = sorted((cache_dir / "sha256").glob("*/*.whl"))
    assert sorted(w.name for w in wheels) == sorted(
        ["arena_test_dep-1.0-py3-none-any.whl", "arena_test_pkg-1.0-py3-none-any.whl"]
    )
    for wheel in wheels:
        assert hashlib.sha256(wheel.read_bytes()).hexdigest() == wheel.parent.name
    assert len(list((cache_dir / "resolutions").glob("*.json"))) == 1
    assert not list((cache_dir / "tmp").iterdir())  # every download folder was removed


def test_the_wheel_cache_forgets_the_least_recently_used_resolutions_beyond_its_budget(
    tmp_path: Path,
) -> None:
    cache = WheelCache(tmp_path)
    hour_ago = time.time() - 2 * 3600

    def stored(name: str, size: int, manifest: str, used_at: float) -> Path:
        data = name.encode() * (size // len(name))
        wheel = Wheel(
            filename=f"{name}-1.0-py3-none-any.whl",
            sha256=hashlib.sha256(data).hexdigest(),
            size=len(data),
            name=name,
            version="1.0",
        )
        path = cache.wheel_path(wheel)
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        (tmp_path / "resolutions").mkdir(exist_ok=True)
        (tmp_path / "resolutions" / manifest).write_text(json.dumps([asdict(wheel)]))
        for file in (path, tmp_path / "resolutions" / manifest):
            os.utime(file, (used_at, used_at))
        return path

    old = stored("oldpkg", 3000, "old.json", hour_ago)
    middle = stored("midpkg", 3000, "middle.json", hour_ago + 60)
    fresh = stored("newpkg", 3000, "fresh.json", time.time())  # used within the grace period
    assert cache.trim(10_000) == 0  # 9,000 bytes: within the budget
    assert cache.trim(5_000) == 6_000
    assert not old.exists() and not (tmp_path / "resolutions" / "old.json").exists()
    assert not middle.exists()  # 6,000 bytes were still over 5,000: the next oldest went too
    assert fresh.exists()  # recently used: kept whatever the budget
    assert cache.trim(0) == 0  # only the fresh resolution is left, inside its grace period
