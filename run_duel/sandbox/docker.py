"""The Docker sandbox: a locked-down container per seat, fresh per launch, or warm (``docker_warm``).

With ``reuse`` on (``ReusePolicy``), a launch forks a fresh agent process in an idle warm container of
the same image, limits and revision, kept by this process between duels (``WarmAgentProcess``); the
rest of this docstring describes the fresh container, whose settings a warm one shares.

Transport: a Unix stream socket. For every launch the referee side creates a private folder holding a
listening socket, bind-mounts that folder read-only at ``/run/arena`` in the container, and starts the
image's entrypoint with ``--connect /run/arena/agent.sock``. The folder is owned by root:10001 with mode
0710 and the socket belongs to uid 10001 with mode 0600: only the agent's user (and root) can connect,
and nothing is world-readable or world-writable. The container has no network at all. The socket is bound
through a descriptor of its folder (``_bind_anonymously``), so the container never sees its host path.

Start-up: an image whose entrypoint is our Python harness runs this checkout's harness instead, copied
into the launch folder, as ``python3 -I -B -u`` (``container_config``), so no code of the agent's packages
runs before its seat is ready, whatever the image's environment says (images built before carry
``PYTHONPATH``). The socket gets its name only once the data folder is filled; our C++ images' launcher
waits for it. A fill that fails because of the archive's own content raises ``AgentDataRefused`` (the
agent's), never ``SandboxError``.

The container's settings are ``docker_config.container_config``'s; the running agent is a
``docker_process.DockerAgentProcess`` (``WarmAgentProcess`` when warm); this process's warm pools and its
clean-up at exit are ``docker_pools``'; orphans of dead processes are ``orphans``'. Containers of failed
launches are removed by the sandbox's remover, a tracked background thread that ``DockerSandbox.close``
waits for.

The image: ``LaunchSpec.agent`` names it as the revision recorded it (``<registry>/<repo>@sha256:<digest>``
with a registry). ``launch`` holds it through ``run_duel.sandbox.images.ImageCache.use`` until the container
exists: pulled by digest if this engine lacks it (once per host), verified, and safe from the image
cache's trimming meanwhile. ``ImageUnavailable``/``ImageMissing``/``ImageDigestMismatch`` are
``SandboxError``s: infrastructure.

Engine failures are infrastructure, never a player's fault (``docker_engine.EngineError``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import time
import weakref
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from docker.errors import ImageNotFound

from run_duel.agent_data import DATA_DIR_ENV, DATA_DIR_IN_SANDBOX, MB, DataError, fill_folder
from run_duel.channel import Channel
from run_duel.harness import HARNESS_DIR, PYTHON_HARNESS_FILES
from run_duel.sandbox.base import AgentDataRefused, LaunchSpec, Sandbox, SandboxError
from run_duel.sandbox.docker_client import get_client
from run_duel.sandbox.docker_config import (
    AGENT_UID,
    BASE_ENV,
    RUNTIME_PREFIX,
    SOCKET_NAME,
    container_config,
    runtime_base,
)
from run_duel.sandbox.docker_engine import ENGINE_FAILURES, EngineError, Remover, each_concurrently, exit_info
from run_duel.sandbox.docker_pools import warm_pool
from run_duel.sandbox.docker_process import (
    LIVE,
    DockerAgentProcess,
    WarmAgentProcess,
    agent_freezer,
    peer_pid,
)
from run_duel.sandbox.docker_warm import (
    ReusePolicy,
    WarmChannel,
    WarmContainer,
    WarmError,
    WarmKey,
    warm_capable,
    warm_key,
)
from run_duel.sandbox.images import ImageCache, ImageUnavailable
from run_duel.sandbox.tail_reader import TailReader

__all__ = ["CONNECT_TIMEOUT_S", "DockerSandbox"]

log = logging.getLogger(__name__)

#: How long the harness may take to connect after the container started (Python start-up only: the
#: harness connects before importing player.py).
CONNECT_TIMEOUT_S = 20.0


def _container_data_root(pid: int, container_id: str = "") -> str:
    """The data tmpfs of the container whose process ``pid`` (as this process sees it) is; with
    ``container_id``, ``pid`` is the engine's (``State.Pid``, a host pid), checked to be that container's
    here (a referee in another pid namespace would find some other process under that number)."""
    if pid and container_id:
        try:
            visible = container_id in Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            visible = False
        pid = pid if visible else 0
    if not pid:
        raise SandboxError(
            "the agent container's processes are not visible here, so its data folder cannot be filled: "
            "run the worker in the host's pid namespace with CAP_SYS_PTRACE (as docker-compose.yml does)"
        )
    return f"/proc/{pid}/root{DATA_DIR_IN_SANDBOX}"


def _fill_container_data(spec: LaunchSpec, root: str) -> None:
    """Write ``spec.data``'s archive into a container's (empty) data folder, owned by the agent's uid."""
    archive = spec.data.archive if spec.data is not None else b""
    if not archive:
        return
    try:
        fill_folder(archive, root, spec.limits.data_mb * MB, uid=AGENT_UID)
    except DataError as exc:  # the archive's own content: the agent's (Seat.refuse_data)
        raise AgentDataRefused(str(exc), spec) from exc
    except OSError as exc:
        raise SandboxError(f"could not fill the agent's data folder: {exc}") from exc


def _bind_anonymously(listener: socket.socket, path: str) -> None:
    """Bind ``listener`` at ``path`` through a descriptor of its folder. The kernel records the address a
    socket was bound with and gives it to every connection accepted on it, which lives in the
    *connecting* process's network namespace: bound by its real path, the agent's container would read
    the referee's folder (its runtime folder, its pid) in ``/proc/net/unix`` and from ``getpeername``.
    This way they read ``/proc/self/fd/<n>/agent.sock``, which names nothing of the host."""
    folder = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        listener.bind(f"/proc/self/fd/{folder}/{os.path.basename(path)}")
    finally:
        os.close(folder)


def _share_with_agent(socket_dir: str, path: str) -> None:
    """Let uid 10001 (and nobody else) reach the socket.

    As root: the folder is root:10001 mode 0710 and the socket 10001:10001 mode 0600. As another user
    (chown not allowed): folder 0711 and socket 0666 — still unreachable for other host users, because the
    runtime folder above is 0700 and only the container sees this folder (as its mount root).
    """
    try:
        os.chown(socket_dir, 0, AGENT_UID)
        os.chown(path, AGENT_UID, AGENT_UID)
    except PermissionError:
        os.chmod(socket_dir, 0o711)  # noqa: S103 - see the docstring
        os.chmod(path, 0o666)  # noqa: S103 - see the docstring
        return
    os.chmod(socket_dir, 0o710)  # noqa: S103 - group-only
    os.chmod(path, 0o600)


#: image -> its agent folder when its entrypoint is our Python harness, else None (``_harness_agent_dir``).
_HARNESS_DIRS: dict[str, str | None] = {}


class DockerSandbox(Sandbox):
    """Runs each agent in a fresh container of its image (see the module docstring)."""

    name = "docker"
    isolation = (
        "Docker container: uid 10001, no network, read-only root with a small noexec /tmp, all capabilities "
        "dropped, no-new-privileges, pids/memory/CPU/ulimit caps; shares the host kernel"
    )

    def __init__(
        self,
        *,
        runtime_dir: str | Path | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        images: ImageCache | None = None,
        reuse: ReusePolicy | None = None,
    ) -> None:
        """``runtime_dir`` is where per-launch socket folders go (default ``$AGENT_RUNTIME_DIR``, else the
        system temp folder). When the referee itself runs in a container talking to the host's engine,
        this folder must exist at the same path in that container and on the host (bind mounts are
        resolved by the engine, on the host). ``images`` fetches and caches agent images (default: the
        registry and cache budget of the environment, ``run_duel.sandbox.images``). ``reuse`` says whether
        agents run in warm containers kept between duels (``docker_warm``; default off: the platform turns
        it on with its ``DUEL_SANDBOX_REUSE*`` settings, ``duel_runner.tasks.duel_sandbox``)."""
        base = runtime_base(runtime_dir)
        self.reuse = reuse if reuse is not None else ReusePolicy()
        self.pool = warm_pool(self.reuse, base) if self.reuse.enabled else None
        try:
            self._api = get_client().api
            if self.pool is None or not self.pool.idle():  # else the engine answered this process lately
                self._api.ping()
        except ENGINE_FAILURES as exc:
            raise SandboxError(f"no Docker engine answers ({exc}); run scripts/ensure_docker.sh") from exc
        base.mkdir(parents=True, exist_ok=True)
        self._images = images if images is not None else ImageCache.from_env()
        self._root = tempfile.mkdtemp(prefix=f"{RUNTIME_PREFIX}{os.getpid()}-", dir=base)
        self.connect_timeout = connect_timeout
        self._processes: weakref.WeakSet[DockerAgentProcess] = weakref.WeakSet()
        self._remover = Remover()

    def launch(self, spec: LaunchSpec) -> DockerAgentProcess:
        """Start agent ``spec.agent`` (an image); return once its harness connected. With reuse on, in a
        warm container of that image when its entrypoint is our Python harness, else in a fresh one."""
        agent_dir = self._harness_agent_dir(spec.agent)
        if self.pool is not None and agent_dir is not None:
            return self._launch_warm(spec, agent_dir)
        socket_dir = tempfile.mkdtemp(prefix="launch-", dir=self._root)
        container_id, conn, data_root = self._start(spec, socket_dir, agent_dir=agent_dir)
        fd = conn.detach()
        proc = DockerAgentProcess(container_id, Channel(fd, fd), socket_dir, spec.limits)
        proc._data_root = data_root
        proc.attach_cgroup(peer_pid(fd))
        self._processes.add(proc)
        LIVE.add(proc)
        return proc

    # -- warm containers (docker_warm) ---------------------------------------------------------------

    def _harness_agent_dir(self, image: str) -> str | None:
        """The agent folder of ``image`` if its entrypoint is our Python harness (cached per process: an
        image reference names one content, by digest on the platform, by content hash from our builder):
        such a container runs this checkout's harness, isolated (``container_config``), and can run warm."""
        cache = _HARNESS_DIRS
        if image not in cache:
            with self._images.use(image):  # fetched by digest if this engine lacks it
                try:
                    entrypoint = self._api.inspect_image(image)["Config"].get("Entrypoint")
                except ImageNotFound as exc:
                    raise ImageUnavailable(f"agent image {image} vanished from the engine") from exc
                except ENGINE_FAILURES as exc:
                    raise EngineError(f"inspecting the agent image failed: {exc}") from exc
            cache[image] = warm_capable(entrypoint)
        return cache[image]

    def _launch_warm(self, spec: LaunchSpec, agent_dir: str) -> WarmAgentProcess:
        """A fresh agent process in an idle warm container of this image and these limits (a new one
        when none is idle, or when the idle one fails to spawn)."""
        assert self.pool is not None
        key = warm_key(spec)
        container = self.pool.take(key)
        if container is not None:
            try:
                return self._spawn(container, spec)
            except WarmError as exc:
                log.warning("warm container %s retired: %s", container.container_id[:12], exc)
                self.pool.give_back(container, reusable=False)
            except AgentDataRefused:  # its forked process never ran: retire the container
                self.pool.give_back(container, reusable=False)
                raise
        container = self._new_warm(spec, agent_dir, key)
        try:
            return self._spawn(container, spec)
        except (WarmError, AgentDataRefused):
            self.pool.give_back(container, reusable=False)
            raise

    def _new_warm(self, spec: LaunchSpec, agent_dir: str, key: WarmKey) -> WarmContainer:
        """Start a warm container; return once its factory imported numpy and said ``warm``."""
        assert self.pool is not None
        socket_dir = tempfile.mkdtemp(prefix="warm-", dir=self.pool.root)
        container_id, conn, _ = self._start(spec, socket_dir, agent_dir=agent_dir, warm=True)
        container = WarmContainer(container_id, conn, socket_dir, key)
        self.pool.created += 1
        try:
            conn.settimeout(self.connect_timeout)
            hello = json.loads(conn.recv(256) or b"{}")
        except (OSError, ValueError) as exc:
            hello = {"error": str(exc)}
        if hello.get("type") != "warm":
            with contextlib.suppress(*ENGINE_FAILURES):
                hello["log"] = self._api.logs(container_id, tail=20).decode("utf-8", "replace")[-2000:]
            self.pool.retire(container)
            raise SandboxError(f"the warm container's factory did not start: {hello}")
        container.factory_pid = peer_pid(conn.fileno())
        return container

    def _spawn(self, container: WarmContainer, spec: LaunchSpec) -> WarmAgentProcess:
        """Have the factory fork the duel's agent process, on a new socketpair and stderr pipe."""
        assert self.pool is not None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        err_r, err_w = os.pipe()
        env = {**BASE_ENV, **spec.harness_env()}
        if spec.limits.data_mb > 0:
            env[DATA_DIR_ENV] = DATA_DIR_IN_SANDBOX
        try:
            container.request({"type": "spawn", "env": env}, fds=[theirs.fileno(), err_w])
        except WarmError:
            ours.close()
            os.close(err_r)
            raise
        finally:
            theirs.close()
            os.close(err_w)
        stderr = TailReader(err_r, spec.limits.log_bytes)
        stderr.start()
        data_root = _container_data_root(container.factory_pid) if spec.limits.data_mb > 0 else None
        try:
            freezer, agent_pid = agent_freezer(container)
            if data_root is not None:  # the factory emptied the folder after the previous duel
                _fill_container_data(spec, data_root)
            ours.sendall(b"\n")  # the agent process waited for this before running anything else
        except AgentDataRefused:
            stderr.stop()
            ours.close()
            raise
        except (WarmError, OSError, SandboxError) as exc:
            stderr.stop()
            ours.close()
            raise WarmError(f"placing the agent process failed: {exc}") from exc
        fd = ours.detach()
        proc = WarmAgentProcess(container, self.pool, WarmChannel(fd, fd), stderr, spec.limits)
        proc._data_root = data_root
        proc.attach_warm(container.factory_pid, freezer, agent_pid)
        self._processes.add(proc)
        LIVE.add(proc)
        return proc

    # -- containers ----------------------------------------------------------------------------------

    def _start(
        self, spec: LaunchSpec, socket_dir: str, *, agent_dir: str | None = None, warm: bool = False
    ) -> tuple[str, socket.socket, str | None]:
        """Create and start a container of ``spec.agent`` whose harness connects to a socket in
        ``socket_dir``; return its id, the connection and (a cold container with a data folder) the data
        folder's path as we reach it. On failure nothing is left (container removed in the background,
        folder deleted). ``agent_dir``: the image runs our Python harness, mounted (``container_config``);
        ``warm``: as a warm container's factory.

        A cold container's data folder is filled before its harness can connect (the socket only gets
        its name then; the harness, or our C++ image's launcher, waits until it does), so before any code
        of the agent runs."""
        container_id: str | None = None
        listener: socket.socket | None = None
        kind = socket.SOCK_SEQPACKET if warm else socket.SOCK_STREAM
        fill = not warm and spec.limits.data_mb > 0
        data_root = None
        try:
            path = os.path.join(socket_dir, SOCKET_NAME)
            bound = os.path.join(socket_dir, ".pending.sock") if fill else path
            listener = socket.socket(socket.AF_UNIX, kind | socket.SOCK_CLOEXEC)
            _bind_anonymously(listener, bound)
            _share_with_agent(socket_dir, bound)
            listener.listen(1)
            if agent_dir is not None:  # this checkout's harness, all its files (HARNESS_NAME first)
                for name in PYTHON_HARNESS_FILES:
                    harness = os.path.join(socket_dir, name)
                    shutil.copyfile(HARNESS_DIR / name, harness)
                    os.chmod(harness, 0o644)
            config = container_config(spec.agent, spec, socket_dir, agent_dir=agent_dir, warm=warm)
            # The image is fetched if this engine lacks it, and kept until the container exists.
            with self._images.use(spec.agent):
                try:
                    container_id = self._api.create_container(**config)["Id"]
                except ImageNotFound as exc:
                    raise ImageUnavailable(f"agent image {spec.agent} vanished from the engine") from exc
            self._api.start(container_id)
            if fill:
                pid = self._api.inspect_container(container_id)["State"]["Pid"]
                data_root = _container_data_root(pid, container_id)
                _fill_container_data(spec, data_root)
                os.rename(bound, path)
            conn = self._accept(listener, container_id)
        except BaseException as exc:
            if listener is not None:
                listener.close()
            if container_id is not None:
                self._remover.remove(container_id)
            shutil.rmtree(socket_dir, ignore_errors=True)
            if isinstance(exc, SandboxError | KeyboardInterrupt | SystemExit):
                raise
            if isinstance(exc, ENGINE_FAILURES):
                raise EngineError(f"starting the agent container failed: {exc}") from exc
            raise
        listener.close()
        os.unlink(path)
        return container_id, conn, data_root

    def launch_many(self, specs: list[LaunchSpec]) -> list[DockerAgentProcess]:
        """Launch several agents concurrently (container start-up dominates a launch); all or nothing.
        When every seat has an idle warm container, one after the other (a fork takes milliseconds)."""
        if len(specs) <= 1 or (self.pool is not None and self.pool.can_serve([warm_key(s) for s in specs])):
            launched: list[DockerAgentProcess] = []
            try:
                for spec in specs:
                    launched.append(self.launch(spec))
            except BaseException:
                for proc in launched:
                    proc.kill()
                raise
            return launched
        with ThreadPoolExecutor(max_workers=len(specs), thread_name_prefix="docker-launch") as pool:
            futures = [pool.submit(self.launch, spec) for spec in specs]
            wait(futures)
        launched = [f.result() for f in futures if f.exception() is None]
        failures = [exc for f in futures if (exc := f.exception()) is not None]
        if failures:
            for proc in launched:
                proc.kill()
            # A refused data folder first: the referee charges that seat and starts the others alone.
            failures.sort(key=lambda exc: not isinstance(exc, AgentDataRefused))
            raise failures[0]
        return launched

    def kill_many(self, procs: list[DockerAgentProcess]) -> None:
        """Kill several agents concurrently (removing a container is an engine round trip of 10-100 ms)."""
        if all(isinstance(proc, WarmAgentProcess) for proc in procs):
            for proc in procs:  # a factory's clean-up takes about a millisecond: no threads needed
                proc.kill()
            return
        each_concurrently(lambda proc: proc.kill(), procs, "docker-kill")

    def pin_many(self, procs: list[DockerAgentProcess], cpus: frozenset[int]) -> list[bool]:
        """Pin several agents concurrently (``DockerAgentProcess.pin_cpus``, one engine call each)."""
        if all(isinstance(proc, WarmAgentProcess) for proc in procs):
            return [proc.pin_cpus(cpus) for proc in procs]  # no engine call: the factory sets affinities
        return each_concurrently(lambda proc: proc.pin_cpus(cpus), procs, "docker-pin")

    def _accept(self, listener: socket.socket, container_id: str) -> socket.socket:
        """Wait for the harness to connect; fail early if the container exits first."""
        deadline = time.monotonic() + self.connect_timeout
        listener.settimeout(0.25)
        while True:
            try:
                conn, _ = listener.accept()
                conn.setblocking(True)
                return conn
            except TimeoutError:
                pass
            state = self._api.inspect_container(container_id)["State"]
            info = exit_info(state)
            if info is not None:
                logs = self._api.logs(container_id, tail=20).decode("utf-8", "replace")
                raise SandboxError(
                    f"the agent container exited (code {info.returncode}) before connecting: {logs[-2000:]}"
                )
            if time.monotonic() >= deadline:
                raise SandboxError(f"the agent container did not connect within {self.connect_timeout:g} s")

    def close(self) -> None:
        """Kill every agent this sandbox launched that is still alive, wait until every container is
        removed (retrying while the engine restarts), then remove the runtime folder."""
        for proc in list(self._processes):
            proc.kill()
        self._remover.join()
        shutil.rmtree(self._root, ignore_errors=True)
