"""Hostile wheels on the operator's package index (issue 27): the packages' caps hold while unpacking.

Anyone can publish a wheel. A compression bomb, a wheel of a hundred thousand files, a wheel whose
directory lies about its sizes, or a big real wheel (scipy) with a small ``AGENT_PACKAGES_MAX_MB`` must be
refused with a message naming the package, and nothing big may land on the host's disk: the wheels'
central directories are checked on the host before any build (``builder.wheels.check_wheels``), and the
build unpacks them with our own counting unpacker (``builder/image_files/install_wheels.py``), which writes
nothing past the caps. The build's disk use is measured: a watcher reads the writable layer of the build
step that installs the packages while it runs.

A private PEP 503 index (a real HTTP server on this machine) serves the wheels.
"""

from __future__ import annotations

import contextlib
import glob
import io
import os
import random
import struct
import subprocess
import sys
import threading
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from test_builder_packages import Server, _serve, make_wheel

from builder import build_submission
from builder.settings import BuilderSettings
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker

MIB = 1024 * 1024
PLAYER = """class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
"""


def _wheel_zip(name: str, version: str, write) -> bytes:
    """A wheel whose package files are written by ``write(zipfile)``; dist-info added."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        write(archive)
        archive.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(
            f"{dist}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(f"{dist}/RECORD", "")
    return buffer.getvalue()


def _zeros(archive: zipfile.ZipFile, path: str, size: int) -> None:
    info = zipfile.ZipInfo(path)
    info.compress_type = zipfile.ZIP_DEFLATED
    chunk = bytes(MIB)
    with archive.open(info, "w", force_zip64=True) as out:
        for _ in range(size // MIB):
            out.write(chunk)


def bomb_wheel() -> bytes:
    """1 GiB of zeros in a 1 MB wheel, its sizes honestly declared."""
    return _wheel_zip("bomb-pkg", "1.0", lambda zf: _zeros(zf, "bomb_pkg/zeros.bin", 1024 * MIB))


def spread_bomb_wheel() -> bytes:
    """300 files of 1 MiB of zeros (each under the per-file ratio floor): 300 MiB from a 0.3 MB wheel."""

    def write(archive: zipfile.ZipFile) -> None:
        for i in range(300):
            _zeros(archive, f"spread_pkg/zeros{i}.bin", MIB)

    return _wheel_zip("spread-pkg", "1.0", write)


def many_files_wheel(count: int = 100_000) -> bytes:
    def write(archive: zipfile.ZipFile) -> None:
        archive.writestr("many_files_pkg/__init__.py", "")
        for i in range(count):
            archive.writestr(zipfile.ZipInfo(f"many_files_pkg/f{i // 1000}/{i}.txt"), b"")

    return _wheel_zip("many-files-pkg", "1.0", write)


def lying_wheel() -> bytes:
    """512 MiB of zeros whose directory (and local header) declare 1000 bytes: within every declared cap."""
    data = bytearray(
        _wheel_zip(
            "liar-pkg",
            "1.0",
            lambda zf: (zf.writestr("liar_pkg/__init__.py", ""), _zeros(zf, "liar_pkg/data.bin", 512 * MIB)),
        )
    )
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        member = archive.getinfo("liar_pkg/data.bin")
        directory = archive.start_dir
    # The zip64 extra field carries the real sizes; make it lie too (uncompressed size = 1000).
    _patch_sizes(data, member.header_offset, local=True)
    pos = directory
    while data[pos : pos + 4] == b"PK\x01\x02":
        name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, pos + 28)
        if data[pos + 46 : pos + 46 + name_len] == b"liar_pkg/data.bin":
            _patch_sizes(data, pos, local=False)
        pos += 46 + name_len + extra_len + comment_len
    return bytes(data)


def _patch_sizes(data: bytearray, at: int, *, local: bool) -> None:
    size_at, name_len_at, fixed = (22, 26, 30) if local else (24, 28, 46)
    name_len, extra_len = struct.unpack_from("<HH", data, at + name_len_at)
    if struct.unpack_from("<I", data, at + size_at)[0] != 0xFFFFFFFF:
        struct.pack_into("<I", data, at + size_at, 1000)
        return
    extra = at + fixed + name_len
    end = extra + extra_len
    while extra + 4 <= end:
        tag, size = struct.unpack_from("<HH", data, extra)
        if tag == 1:  # zip64: the uncompressed size comes first
            struct.pack_into("<Q", data, extra + 4, 1000)
            return
        extra += 4 + size
    raise AssertionError("no zip64 field to patch")


def layout_wheel() -> bytes:
    """A wheel using every install scheme of its .data folder."""

    def write(archive: zipfile.ZipFile) -> None:
        archive.writestr("layout_pkg/__init__.py", "VALUE = 'layout'\n")
        archive.writestr("layout_pkg-1.0.data/purelib/layout_extra.py", "EXTRA = 1\n")
        archive.writestr("layout_pkg-1.0.data/platlib/layout_native.py", "NATIVE = 2\n")
        archive.writestr("layout_pkg-1.0.data/scripts/layout-tool", "#!python\nprint('tool')\n")
        archive.writestr("layout_pkg-1.0.data/headers/layout.h", "int layout;\n")
        archive.writestr("layout_pkg-1.0.data/data/share/layout/table.txt", "1 2 3\n")

    return _wheel_zip("layout-pkg", "1.0", write)


def bytecode_wheel() -> bytes:
    """About 0.8 MiB of Python source: under a 1 MiB cap as declared, over it once compiled to bytecode."""
    source = "".join(f"VALUE_{i} = ({i}, '{i}', [{i}, {i + 1}])\n" for i in range(20_000))
    return _wheel_zip("bytecode-pkg", "1.0", lambda zf: zf.writestr("bytecode_pkg/__init__.py", source))


def _real_wheel(tmp: Path) -> Path:
    """A big real wheel: scipy 1.10.1 for CPython 3.11 (34 MB, about 100 MiB unpacked), from a local
    wheel folder if this machine has one, else from PyPI."""
    pattern = "scipy-1.10.1-cp311-cp311-manylinux*.whl"
    for folder in ("/opt/pypi-more/files", os.environ.get("PIP_FIND_LINKS", "/opt/wheels")):
        found = sorted(glob.glob(os.path.join(folder, pattern)))
        if found:
            return Path(found[0])
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
         "3.11", "--platform", "manylinux2014_x86_64", "-d", str(tmp), "scipy==1.10.1"],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return next(tmp.glob(pattern))


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    files: dict[str, bytes] = {}
    wheels = {
        "bomb-pkg": ("bomb_pkg-1.0-py3-none-any.whl", bomb_wheel()),
        "spread-pkg": ("spread_pkg-1.0-py3-none-any.whl", spread_bomb_wheel()),
        "many-files-pkg": ("many_files_pkg-1.0-py3-none-any.whl", many_files_wheel()),
        "long-name-pkg": (
            "long_name_pkg-1.0-py3-none-any.whl",
            _wheel_zip("long-name-pkg", "1.0", lambda zf: zf.writestr("long_name_pkg/" + "n" * 60_000, "")),
        ),
        "liar-pkg": ("liar_pkg-1.0-py3-none-any.whl", lying_wheel()),
        "layout-pkg": ("layout_pkg-1.0-py3-none-any.whl", layout_wheel()),
        "bytecode-pkg": ("bytecode_pkg-1.0-py3-none-any.whl", bytecode_wheel()),
        # scipy requires numpy: a stand-in (scipy is refused before anything is installed)
        "numpy": ("numpy-1.24.4-py3-none-any.whl", make_wheel("numpy", "1.24.4", {"numpy/__init__.py": ""})),
    }
    scipy = _real_wheel(tmp_path_factory.mktemp("scipy"))
    wheels["scipy"] = (scipy.name, scipy.read_bytes())
    for project, (filename, body) in wheels.items():
        files[f"/files/{filename}"] = body
        files[f"/simple/{project}/"] = (
            f'<html><body><a href="/files/{filename}">{filename}</a></body></html>'.encode()
        )
    server, httpd = _serve(files)
    yield server
    httpd.shutdown()


class BuildDiskWatch:
    """Measures the build's disk use while it runs: polls the engine for the build step installing the
    packages (its command carries this watch's unique file cap) and sizes its writable layer (the overlay
    upper folder on this host), keeping the largest size seen."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.peak = 0
        self.seen = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> BuildDiskWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        api = get_client().api
        while not self._stop.is_set():
            try:
                for container in api.containers():
                    if "install_packages.sh" in container["Command"] and self.marker in container["Command"]:
                        upper = api.inspect_container(container["Id"])["GraphDriver"]["Data"]["UpperDir"]
                        self.seen = True
                        self.peak = max(self.peak, _size(upper))
            except Exception:  # a step container vanishing mid-poll
                pass
            self._stop.wait(0.05)


def _size(folder: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


@pytest.fixture
def settings(base_image: str, index: Server, tmp_path: Path) -> BuilderSettings:
    return BuilderSettings(
        base_image=base_image,
        pip_index_url=f"{index.url}/simple",
        wheel_cache_dir=tmp_path / "wheels",
        packages_max_files=40_000 + random.randint(0, 9_999),  # also the disk watch's marker
    )


def _build(tmp_path: Path, settings: BuilderSettings, requirements: str):
    path = tmp_path / f"{uuid.uuid4().hex}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("player.py", f"# {uuid.uuid4()}\n{PLAYER}")
        archive.writestr("requirements.txt", requirements)
    with BuildDiskWatch(f" {settings.packages_max_files}") as watch:
        result = build_submission(path, backend="docker", work_dir=tmp_path, settings=settings, registry=None)
    return result, watch


def test_a_compression_bomb_wheel_is_refused_on_the_host_before_any_build(settings, tmp_path) -> None:
    result, watch = _build(tmp_path, settings, "bomb-pkg==1.0\n")
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED"), result.log[-2000:]
    assert "the wheel of bomb-pkg 1.0" in result.error and "compression bomb" in result.error, result.error
    assert not watch.seen  # never copied into a build


def test_a_compression_bomb_spread_over_small_files_is_refused_on_the_host(settings, tmp_path) -> None:
    """Each file is under the per-file floor; the wheel as a whole inflates 1000 to 1 (within the 1 GiB
    cap of bytes: only the ratio refuses it)."""
    result, watch = _build(tmp_path, settings, "spread-pkg==1.0\n")
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED"), result.log[-2000:]
    assert "the wheel of spread-pkg 1.0" in result.error and "compression bomb" in result.error, result.error
    assert not watch.seen


def test_a_wheel_of_a_hundred_thousand_files_is_refused_on_the_host(settings, tmp_path) -> None:
    result, watch = _build(tmp_path, settings, "many-files-pkg==1.0\n")
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED"), result.log[-2000:]
    assert "the wheel of many-files-pkg 1.0" in result.error, result.error
    assert f"over this server's limit of {settings.packages_max_files}" in result.error
    assert not watch.seen


def test_a_wheel_with_a_60_000_byte_file_name_is_refused_on_the_host(settings, tmp_path) -> None:
    result, watch = _build(tmp_path, settings, "long-name-pkg==1.0\n")
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED"), result.log[-2000:]
    assert "the wheel of long-name-pkg 1.0" in result.error, result.error
    assert "a file name over 1024 bytes" in result.error, result.error
    assert not watch.seen


def test_a_big_real_wheel_is_refused_before_it_unpacks(settings, tmp_path) -> None:
    """scipy (34 MB, about 100 MiB unpacked) with AGENT_PACKAGES_MAX_MB=60: its download fits, its
    unpacked size does not; refused from its directory, never copied into a build."""
    result, watch = _build(tmp_path, replace(settings, packages_max_mb=60), "scipy==1.10.1\n")
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED"), result.log[-2000:]
    assert "the wheel of scipy 1.10.1" in result.error, result.error
    assert "over this server's limit of 60 MiB" in result.error, result.error
    assert not watch.seen


def test_a_wheel_whose_sizes_lie_is_stopped_while_unpacking_with_nothing_big_written(
    settings, tmp_path
) -> None:
    """Its directory declares 1000 bytes for 512 MiB of zeros, so the host's check passes; the unpacker
    stops at the declared size, and the build step's writable layer never grows past a few KiB."""
    result, watch = _build(tmp_path, replace(settings, packages_max_mb=64), "liar-pkg==1.0\n")
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED"), result.log[-2000:]
    assert result.error.startswith("liar_pkg 1.0 (liar_pkg-1.0-py3-none-any.whl)"), result.error
    assert watch.peak < MIB, watch.peak


def test_bytecode_counts_against_the_cap_while_it_is_written(settings, tmp_path) -> None:
    """0.8 MiB of source passes the host's check against a 1 MiB cap; its bytecode would cross it, and the
    unpacker refuses before writing it."""
    result, watch = _build(tmp_path, replace(settings, packages_max_mb=1), "bytecode-pkg==1.0\n")
    assert (result.ok, result.error_kind) == (False, "BUILD_FAILED"), result.log[-2000:]
    assert result.error.startswith("bytecode_pkg 1.0 (bytecode_pkg-1.0-py3-none-any.whl), its bytecode: ")
    assert "over this server's limit of 1 MiB" in result.error, result.error
    assert watch.peak <= MIB, watch.peak


def test_wheels_are_unpacked_as_pip_target_would(settings, tmp_path) -> None:
    result, _watch = _build(tmp_path, settings, "layout-pkg==1.0\n")
    assert result.ok, f"{result.error}\n{result.log[-3000:]}"
    try:
        output = (
            get_client()
            .containers.run(
                result.agent_ref,
                entrypoint=["sh", "-c"],
                command=[
                    "cd /opt/agent-packages && ls -d bin/layout-tool include/python/layout-pkg/layout.h "
                    "share/layout/table.txt layout_extra.py layout_native.py; head -n 1 bin/layout-tool; "
                    "stat -c '%a %u' bin/layout-tool layout_pkg/__init__.py; "
                    "PYTHONPATH=/opt/agent-packages "
                    "python3 -v -c 'import layout_pkg, layout_extra, layout_native' "
                    "2>&1 | grep -c 'code object from .*/opt/agent-packages/.*__pycache__'"
                ],
                network_mode="none",
                remove=True,
            )
            .decode()
        )
    finally:
        get_client().api.remove_image(result.agent_ref, force=True)
    assert output.split("\n") == [
        "bin/layout-tool",
        "include/python/layout-pkg/layout.h",
        "layout_extra.py",
        "layout_native.py",
        "share/layout/table.txt",
        "#!/usr/bin/python3",
        "555 0",
        "444 0",
        "3",  # the three modules load from the bytecode compiled at build time
        "",
    ], output
