"""The hostile battery against what agents bring at start-up: no code of an agent's runs before its seat
is ready, nor in a process that outlives a duel (issue 27).

A Python agent's ``requirements.txt`` names one wheel, served by a private package index (a real HTTP
server on this machine, PEP 503), that ships everything a package may run at interpreter start-up:

- a top-level ``sitecustomize.py`` (Python imports it at start-up from any folder on the path) that
  starts a thread and plants ``$ARENA_DATA_DIR/seed.txt`` before the referee can fill the folder;
- a ``.pth`` file whose ``import`` line runs a hook (``.pth`` files work in the agent's own process:
  its packages are added with ``site.addsitedir``), which records when and where it ran;
- a package shadowing ``numpy``, which the warm factory would import before forking (it records where it
  ran, then hands over the real numpy).

A C++ agent's ``main()`` plants ``seed.txt`` before ``arena::run`` connects.

Every duel gives the agent a stored data folder holding ``seed.txt`` (what "the last duel" left), so an
agent whose code ran before the fill makes the fill fail (``File exists``). Each test runs with a fresh
container per seat and with warm containers reused between duels; the images are built once per module.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_builder_packages import _serve, make_wheel

from builder import BuildResult, build_submission
from builder.settings import BuilderSettings
from run_duel.agent_data import AgentData, archive_of, files_of
from run_duel.api import LaunchSpec, Limits, play_duel
from run_duel.sandbox.docker_client import get_client

pytestmark = pytest.mark.docker

#: What "the last duel" left in the agent's data folder.
STORED = {"seed.txt": b"from the last duel"}
LIMITS = Limits(memory_mb=256, data_mb=1, init_timeout=30.0, log_bytes=64 * 1024)
DUELS = 3

SITECUSTOMIZE = """
import os
import threading
import time

HOSTILE_PID = os.getpid()
TICKS = [0]


def _plant():
    try:
        with open(os.path.join(os.environ.get("ARENA_DATA_DIR", "/arena-data"), "seed.txt"), "x") as handle:
            handle.write("planted by sitecustomize")
    except OSError:
        pass


def _tick():  # lives as long as its process: in a warm factory, across duels, planting into each
    while True:
        TICKS[0] += 1
        _plant()
        time.sleep(0.01)


_plant()
threading.Thread(target=_tick, daemon=True).start()
"""

PTH_HOOK = """
import os

_folder = os.environ.get("ARENA_DATA_DIR", "")
REPORT = {"pid": os.getpid(), "data": sorted(os.listdir(_folder)) if _folder else None}
"""

SHADOW_NUMPY = """
import os
import sys

_folder = os.environ.get("ARENA_DATA_DIR", "")
_report = {"pid": os.getpid(), "data": sorted(os.listdir(_folder)) if _folder else None}
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_saved = sys.path[:]
del sys.modules["numpy"]
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
try:
    import numpy as _real
finally:
    sys.path[:] = _saved
_real.ARENA_SHADOW = _report
sys.modules["numpy"] = _real
"""

PLAYER = """
import json
import os
import sys
import threading

import numpy

_site = sys.modules.get("sitecustomize")
_hook = sys.modules.get("arena_hostile_start_hook")
_folder = os.environ["ARENA_DATA_DIR"]
REPORT = {
    "pid": os.getpid(),
    "sitecustomize": getattr(_site, "HOSTILE_PID", None),
    "ticks": getattr(_site, "TICKS", [None])[0],
    "pth_hook": getattr(_hook, "REPORT", None),
    "numpy_shadow": getattr(numpy, "ARENA_SHADOW", None),
    "threads": threading.active_count(),
    "data": {name: open(os.path.join(_folder, name)).read() for name in sorted(os.listdir(_folder))},
    "unix_sockets": open("/proc/net/unix").read(),
}
print("START_REPORT " + json.dumps(REPORT), file=sys.stderr)


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

MAIN_CPP = r"""
// Plants seed.txt in its data folder from main(), before arena::run connects, then plays.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "arena.hpp"

class First : public arena::Player {
 public:
  int start(const arena::Observation&, const std::vector<int>& valid) override { return valid[0]; }
  int step(const arena::Observation&, const std::vector<int>& valid, double) override { return valid[0]; }
  void end(const arena::Observation&, double) override {}
};

int main(int argc, char** argv) {
  const char* folder = std::getenv("ARENA_DATA_DIR");
  std::string path = std::string(folder ? folder : "/nonexistent") + "/seed.txt";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd >= 0) {
    const char text[] = "planted by main";
    ssize_t written = ::write(fd, text, sizeof text - 1);
    ::close(fd);
    std::fprintf(stderr, "MAIN planted seed.txt (%zd bytes)\n", written);
  } else if (errno == EEXIST) {
    char buffer[256] = {0};
    int in = ::open(path.c_str(), O_RDONLY);
    ssize_t got = in >= 0 ? ::read(in, buffer, sizeof buffer - 1) : -1;
    if (in >= 0) ::close(in);
    std::fprintf(stderr, "MAIN found seed.txt: %s (%zd bytes)\n", buffer, got);
  } else {
    std::fprintf(stderr, "MAIN could not plant: %s\n", std::strerror(errno));
  }
  First player;
  return arena::run(argc, argv, player);
}
"""

MAIN_JS = """
'use strict';
// Plants seed.txt in its data folder as soon as the harness requires it, then plays.
const fs = require('fs');
const path = require('path');

const seed = path.join(process.env.ARENA_DATA_DIR || '/nonexistent', 'seed.txt');
try {
  fs.writeFileSync(seed, 'planted by main.js', { flag: 'wx' });
  console.error('MAIN planted seed.txt');
} catch (err) {
  const found = err.code === 'EEXIST' ? fs.readFileSync(seed, 'utf8') : null;
  console.error(found === null ? String(err) : `MAIN found seed.txt: ${found}`);
}

class Player {
  start(state, validActions) { return validActions[0]; }
  step(state, validActions) { return validActions[0]; }
}

module.exports = Player;
"""


@pytest.fixture(scope="module")
def built(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, BuildResult]]:
    """The hostile Python agent (its wheel from a private index) and the hostile C++ agent, built once."""
    work = tmp_path_factory.mktemp("hostile-start")
    wheel = make_wheel(
        "arena-hostile-start",
        "1.0",
        {
            "sitecustomize.py": SITECUSTOMIZE,
            "arena_hostile_start.pth": "import arena_hostile_start_hook\n",
            "arena_hostile_start_hook.py": PTH_HOOK,
            "numpy/__init__.py": SHADOW_NUMPY,
        },
    )
    filename = "arena_hostile_start-1.0-py3-none-any.whl"
    page = f'<html><body><a href="/files/{filename}">{filename}</a></body></html>'
    server, httpd = _serve({f"/files/{filename}": wheel, "/simple/arena-hostile-start/": page.encode()})
    settings = BuilderSettings(
        base_image=base_image, pip_index_url=f"{server.url}/simple", wheel_cache_dir=work / "wheels"
    )
    results = {}
    try:
        for name, files in {
            "python": {"player.py": PLAYER, "requirements.txt": "arena-hostile-start==1.0\n"},
            "cpp": {"main.cpp": MAIN_CPP},
            "javascript": {"main.js": MAIN_JS},
        }.items():
            archive = work / f"{name}-{uuid.uuid4().hex}.zip"
            with zipfile.ZipFile(archive, "w") as zf:
                for path, text in files.items():
                    fresh = path.endswith((".cpp", ".js"))  # never an image cached from an earlier run
                    zf.writestr(path, f"// {uuid.uuid4()}\n{text}" if fresh else text)
            result = build_submission(
                archive, backend="docker", work_dir=work, settings=settings, registry=None
            )
            assert result.ok, f"building {name} failed: {result.error}\n{result.log[-3000:]}"
            results[name] = result
    finally:
        httpd.shutdown()
    yield results
    for result in results.values():
        get_client().api.remove_image(result.agent_ref, force=True)


@pytest.fixture(scope="module", params=[False, True], ids=["fresh", "warm"])
def sandbox(request: pytest.FixtureRequest, docker_engine: None) -> Iterator[object]:
    from run_duel.sandbox.docker import DockerSandbox
    from run_duel.sandbox.docker_warm import ReusePolicy

    runtime = Path(tempfile.mkdtemp(prefix="rl-arena-test-start-"))
    made = DockerSandbox(runtime_dir=runtime, reuse=ReusePolicy(enabled=request.param))
    yield made
    made.close()
    if made.pool is not None:
        made.pool.close()
    shutil.rmtree(runtime, ignore_errors=True)


def _duel(sandbox, image: str, data: AgentData, label: str) -> dict:
    """Two Tic-tac-toe matches: the agent in seat 1 with ``data`` (saved), the same agent in seat 2."""
    return play_duel(
        "tic-tac-toe",
        sandbox,
        LaunchSpec(agent=image, limits=LIMITS, data=data, labels={"duel": label, "revision": "start-1"}),
        LaunchSpec(
            agent=image,
            limits=LIMITS,
            data=AgentData(archive=archive_of(STORED), save=False),
            labels={"duel": label, "revision": "start-2"},
        ),
        matches=2,
        pin_cpus=False,
    )


def _report(duel: dict) -> dict:
    for line in duel["player_1_log"].splitlines():
        if line.startswith("START_REPORT "):
            return json.loads(line.split(" ", 1)[1])
    raise AssertionError(f"no START_REPORT in the log:\n{duel['player_1_log'][-3000:]}")


@pytest.fixture(scope="module")
def python_duels(sandbox, built: dict[str, BuildResult]) -> list[tuple[dict, AgentData]]:
    """Three duels in a row of the hostile Python agent (a warm sandbox reuses its containers)."""
    label = f"start-{uuid.uuid4().hex[:8]}"
    played = []
    for _ in range(DUELS):
        data = AgentData(archive=archive_of(STORED))
        played.append((_duel(sandbox, built["python"].agent_ref, data, label), data))
    return played


def test_the_data_folder_is_filled_before_any_package_code_runs(python_duels) -> None:
    for duel, data in python_duels:
        assert duel["other_errors"] == duel["player_1_errors"] == duel["player_2_errors"] == 0, duel[
            "error_msg"
        ]
        assert _report(duel)["data"] == {"seed.txt": "from the last duel"}
        assert files_of(data.saved) == STORED and data.problem == ""


def test_a_packages_sitecustomize_never_runs(python_duels) -> None:
    for duel, _data in python_duels:
        report = _report(duel)
        assert report["sitecustomize"] is None, report
        assert report["threads"] == 1, report  # no thread of the package's, none inherited from a factory


def test_pth_files_run_in_the_agent_process_after_its_folder_is_filled(python_duels) -> None:
    for duel, _data in python_duels:
        report = _report(duel)
        assert report["pth_hook"] == {"pid": report["pid"], "data": ["seed.txt"]}, report


def test_a_package_shadowing_numpy_runs_only_in_the_agent_process(python_duels) -> None:
    for duel, _data in python_duels:
        report = _report(duel)
        assert report["numpy_shadow"] == {"pid": report["pid"], "data": ["seed.txt"]}, report
        assert report["pid"] != 1  # never the warm factory


def test_nothing_of_the_agent_runs_in_the_warm_factory(sandbox, python_duels) -> None:
    if sandbox.pool is None:
        pytest.skip("fresh containers have no factory")
    assert sandbox.pool.created == 2  # one container per seat, reused by every duel
    for container in sandbox.pool.idle():
        pid = container.factory_pid
        assert pid > 0
        status = Path(f"/proc/{pid}/status").read_text()
        assert "\nThreads:\t1\n" in status, status  # no thread of a package's sitecustomize
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert "/opt/agent-packages" not in maps  # not one of the agent's modules loaded


def test_the_container_never_sees_the_referees_socket_path(python_duels) -> None:
    """The connection the referee accepted lives in the container's network namespace and carries the
    address its listener was bound with: that must name nothing of the referee's host."""
    for duel, _data in python_duels:
        table = _report(duel)["unix_sockets"].splitlines()[1:]
        paths = [line.split()[7] for line in table if len(line.split()) >= 8]
        assert paths, table  # the referee's end of the agent's connection is listed
        assert all(path.startswith("/proc/self/fd/") for path in paths), table


@pytest.mark.parametrize("language", ["cpp", "javascript"])
def test_a_native_main_runs_only_once_the_data_folder_is_filled(
    sandbox, built: dict[str, BuildResult], language: str
) -> None:
    """A C++ ``main()`` (our launcher waits for the socket) and a JavaScript module's top level (the
    harness connects before it requires ``main.js``) find the folder filled."""
    label = f"start-{language}-{uuid.uuid4().hex[:8]}"
    for _ in range(2):
        data = AgentData(archive=archive_of(STORED))
        duel = _duel(sandbox, built[language].agent_ref, data, label)
        assert duel["other_errors"] == duel["player_1_errors"] == duel["player_2_errors"] == 0, duel[
            "error_msg"
        ]
        assert "MAIN found seed.txt: from the last duel" in duel["player_1_log"], duel["player_1_log"][-2000:]
        assert files_of(data.saved) == STORED


def test_a_folder_its_own_archive_cannot_fill_is_the_agents_loss_and_reset(
    sandbox, built: dict[str, BuildResult]
) -> None:
    """A stored archive naming one file twice (``File exists`` on the second): never INFRA."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for content in (b"one", b"two"):
            info = tarfile.TarInfo("seed.txt")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    data = AgentData(archive=buffer.getvalue())
    duel = _duel(sandbox, built["python"].agent_ref, data, f"start-refused-{uuid.uuid4().hex[:8]}")
    assert duel["other_errors"] == 0 and duel["player_2_errors"] == 0, duel["error_msg"]
    assert duel["player_1_errors"] == 2
    assert {m["error_kind"] for m in duel["matches"]} == {"CRASH"}
    assert "data folder could not be restored" in duel["matches"][0]["error_msg"]
    assert "File exists" in duel["matches"][0]["error_msg"]
    assert data.refused and data.saved == b"" and "emptied" in data.problem


def test_an_image_built_before_isolation_starts_isolated_too(sandbox, built: dict[str, BuildResult]) -> None:
    """An image of the old layout (``PYTHONPATH=/opt/agent-packages`` and a harness started without
    ``-I``): the sandbox runs this checkout's isolated harness in it all the same."""
    old_layout = (
        f"FROM {built['python'].agent_ref}\n"
        "ENV PYTHONPATH=/opt/agent-packages\n"
        'ENTRYPOINT ["python3", "-B", "-s", "/opt/arena/arena_harness.py", "--agent-dir", "/agent"]\n'
    )
    tag = f"rl-arena-test-old-layout:{uuid.uuid4().hex[:12]}"
    get_client().images.build(fileobj=io.BytesIO(old_layout.encode()), tag=tag, rm=True, network_mode="none")
    try:
        data = AgentData(archive=archive_of(STORED))
        duel = _duel(sandbox, tag, data, f"start-old-{uuid.uuid4().hex[:8]}")
        assert duel["other_errors"] == duel["player_1_errors"] == duel["player_2_errors"] == 0, duel[
            "error_msg"
        ]
        report = _report(duel)
        assert report["sitecustomize"] is None and report["threads"] == 1, report
        assert report["pth_hook"] == {"pid": report["pid"], "data": ["seed.txt"]}, report
        assert files_of(data.saved) == STORED
    finally:
        get_client().api.remove_image(tag, force=True)
