"""The arena on a fleet: two machines' worth of Docker engines and workers, one registry, one database.

Tests run in this order and share the fleet of the ``cluster`` fixture (conftest.py); each one states
what it needs, so any one of them also runs alone (``-k``).
"""

from __future__ import annotations

import os
import re
import subprocess
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clusterlib import Cluster, wait_until

from core.actions import schedule_duel
from core.management.commands.queue_status import queue_status
from core.models import Build, Duel, Match, RatingHistory, SmokeTest, WorkerStatus

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.redis, pytest.mark.postgres]

#: Matches of a short duel (random against minimax: about a second, containers included).
SHORT = 4
#: Matches of a long duel of the deliberate agents: at least 150 x 7 moves x 10 ms = 10.5 s of play
#: whatever the machine's speed, so an engine killed as soon as its containers are seen dies mid-duel.
LONG = 150
DUEL_FIELDS = (
    "pk",
    "state",
    "worker",
    "attempts",
    "generation",
    "num_matches",
    "player_1_errors",
    "player_2_errors",
    "other_errors",
    "failure_reason",
    "rated",
)


@pytest.fixture(autouse=True)
def _database(cluster: Cluster, django_db_blocker: Any) -> Iterator[None]:
    """Every test here reads and writes the database the fleet uses, outside any transaction."""
    with django_db_blocker.unblock():
        yield


def rows(ids: list[int]) -> list[dict[str, Any]]:
    return list(Duel.objects.filter(pk__in=ids).order_by("pk").values(*DUEL_FIELDS))


def settled(ids: list[int]) -> bool:
    """Every duel of ``ids`` is over (FINISHED or FAILED)."""
    return Duel.objects.filter(pk__in=ids, state__in=("FINISHED", "FAILED")).count() == len(ids)


def short_duels(cluster: Cluster, count: int) -> list[int]:
    """Queue ``count`` ladder duels of random against minimax, seats alternating."""
    one, two = cluster.agents["random"], cluster.agents["minimax"]
    return [
        schedule_duel(*((one, two) if i % 2 else (two, one)), kind=Duel.Kind.LADDER, num_matches=SHORT).pk
        for i in range(count)
    ]


def assert_played_once_and_charged_to_nobody(ids: list[int]) -> list[dict[str, Any]]:
    """Every duel FINISHED with exactly one stored result (its matches, once each), no error charged to a
    player or to us, and exactly one counted attempt (no failure was ever counted against it)."""
    found = rows(ids)
    assert len(found) == len(ids)
    bad = [r for r in found if r["state"] != "FINISHED"]
    assert not bad, bad
    charged = [r for r in found if r["player_1_errors"] or r["player_2_errors"] or r["other_errors"]]
    assert not charged, charged
    counted = [r for r in found if r["attempts"] != 1]
    assert not counted, counted
    indexes = Match.objects.filter(duel_id__in=ids).values_list("duel_id", "index")
    per_duel = Counter(duel_id for duel_id, _ in indexes)
    assert len(set(indexes)) == len(indexes)
    wrong = {r["pk"]: per_duel[r["pk"]] for r in found if per_duel[r["pk"]] != r["num_matches"]}
    assert not wrong, f"duels whose stored matches differ from the matches played: {wrong}"
    return found


def assert_rated_once(ids: list[int]) -> None:
    """Ratings consumed each duel exactly once (one history row per player)."""
    wait_until(lambda: Duel.objects.filter(pk__in=ids, rated=True).count() == len(ids), 120, "the ratings")
    history = Counter(RatingHistory.objects.filter(duel_id__in=ids).values_list("duel_id", flat=True))
    assert set(history.values()) == {2} and len(history) == len(ids), history


def manifest_status(registry: str, ref: str) -> int:
    """HTTP status of ``HEAD`` of the manifest ``ref`` (``host/repo@sha256:...``) in the registry."""
    repository, digest = ref.split("@", 1)
    path = repository.removeprefix(registry + "/")
    request = urllib.request.Request(f"http://{registry}/v2/{path}/manifests/{digest}", method="HEAD")
    request.add_header("Accept", "application/vnd.docker.distribution.manifest.v2+json")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def worker_status(cluster: Cluster, key: str) -> WorkerStatus | None:
    return WorkerStatus.objects.filter(name=cluster[key].worker_name).first()


def test_each_node_is_an_independent_docker_engine(cluster: Cluster) -> None:
    infos = {key: node.info() for key, node in cluster.nodes.items()}
    for key, info in infos.items():
        node = cluster[key]
        assert f"rl-arena.node={node.name}" in info["Labels"], info["Labels"]  # the engine started for it
        assert info["DockerRootDir"].endswith(f"/{node.name}/docker"), info["DockerRootDir"]
        assert info["Driver"] in ("overlay2", "vfs"), info["Driver"]
    run = {key: Path(node.host.removeprefix("unix://")).parent for key, node in cluster.nodes.items()}
    containerds = {key: int((folder / "containerd.pid").read_text()) for key, folder in run.items()}
    assert containerds["a"] != containerds["b"]
    for key, pid in containerds.items():
        dockerd = int((run[key] / "dockerd.pid").read_text())
        dockerd_cmdline = Path(f"/proc/{dockerd}/cmdline").read_text().split("\0")
        containerd_cmdline = Path(f"/proc/{pid}/cmdline").read_text()
        assert dockerd_cmdline[dockerd_cmdline.index("--containerd") + 1].startswith(str(run[key]) + "/")
        assert str(run[key]) in containerd_cmdline
    for key in cluster.nodes:
        status = wait_until(lambda key=key: worker_status(cluster, key), 60, f"node {key} to report")
        assert status.healthy and status.host == cluster[key].name, status


def test_the_machines_main_engine_keeps_its_bridge(cluster: Cluster) -> None:
    """A dockerd started with --bridge=none deletes the host's docker0 at start; the node script puts it
    back, or the main engine could no longer build images nor run bridged containers."""
    main_env = {k: v for k, v in os.environ.items() if k != "DOCKER_HOST"}
    inspect = subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True, env=main_env)
    if inspect.returncode != 0:
        pytest.skip("the main engine runs without a bridge network")
    assert subprocess.run(["ip", "link", "show", "docker0"], capture_output=True).returncode == 0


def test_an_agent_built_on_node_a_plays_on_node_b(cluster: Cluster) -> None:
    one, two = cluster.agents["random"], cluster.agents["minimax"]
    pattern = re.compile(rf"^{re.escape(cluster.registry)}/[a-z0-9/_.-]+@sha256:[0-9a-f]{{64}}$")
    for revision in (one, two):
        assert pattern.match(revision.agent_ref), revision.agent_ref
        built_by = Build.objects.filter(revision=revision, state="SUCCEEDED").values_list("worker", flat=True)
        tested_by = SmokeTest.objects.filter(revision=revision).values_list("worker", flat=True)
        assert {cluster.node_of(w) for w in [*built_by, *tested_by]} == {"a"}, (built_by, tested_by)
        assert manifest_status(cluster.registry, revision.agent_ref) == 200
        assert cluster["b"].image_digests(revision.agent_ref) is None  # never built nor pulled on B
        # Uploaded on the web host, built on A from the upload store: A's own DATA_DIR never held the zip.
        assert (cluster.data_dir / revision.zip_path).is_file()
        assert not (cluster["a"].data_dir / revision.zip_path).exists()
    cluster.set_consuming("a", False)  # only node B takes this duel
    try:
        duel = schedule_duel(one, two, num_matches=SHORT)
        wait_until(lambda: settled([duel.pk]), 180, "node B to play the duel", details=cluster.diagnose)
    finally:
        cluster.set_consuming("a", True)
    [row] = assert_played_once_and_charged_to_nobody([duel.pk])
    assert cluster.node_of(row["worker"]) == "b", row
    for revision in (one, two):
        digests = cluster["b"].image_digests(revision.agent_ref)
        assert digests is not None and revision.agent_ref in digests, (revision.agent_ref, digests)
        assert f"pulled agent image {revision.agent_ref} " in cluster["b"].log()


def test_forty_ladder_duels_are_spread_over_both_nodes_with_one_result_each(cluster: Cluster) -> None:
    ids = short_duels(cluster, 40)
    wait_until(lambda: settled(ids), 600, "the 40 duels", interval=0.5, details=cluster.diagnose)
    found = assert_played_once_and_charged_to_nobody(ids)
    played = Counter(cluster.node_of(r["worker"]) for r in found)
    assert played["a"] >= 10 and played["b"] >= 10 and played["a"] + played["b"] == 40, played
    assert_rated_once(ids)


def test_a_node_whose_engine_is_killed_mid_run_loses_no_duel_and_charges_nobody(cluster: Cluster) -> None:
    a, b = cluster["a"], cluster["b"]
    if not b.engine_running():
        b.start_engine()
    wait_until(lambda: worker_status(cluster, "b") and worker_status(cluster, "b").healthy, 60, "B healthy")
    slow_1, slow_2 = cluster.agents["slow-1"], cluster.agents["slow-2"]
    # Node B takes the two long duels (node A consumes nothing meanwhile), then A takes the queue back.
    cluster.set_consuming("a", False)
    try:
        held = [schedule_duel(slow_1, slow_2, kind=Duel.Kind.LADDER, num_matches=LONG).pk for _ in range(2)]
        wait_until(
            lambda: all(len(b.duel_containers(duel_id)) == 2 for duel_id in held),
            180,
            "node B to be playing both long duels (two running agent containers each)",
            details=cluster.diagnose,
        )
        queued = short_duels(cluster, 16)
    finally:
        cluster.set_consuming("a", True)
    claimed_by_b = {r["pk"]: cluster.node_of(r["worker"]) for r in rows(held)}
    assert set(claimed_by_b.values()) == {"b"}, claimed_by_b
    assert not Duel.objects.filter(pk__in=held, state="FINISHED").exists()

    cluster.lost_containers = {c["Id"] for duel_id in held for c in b.duel_containers(duel_id)}
    b.kill_engine()  # dockerd, then containerd, the agents' processes and their shims: SIGKILL

    status = wait_until(
        lambda: (s := worker_status(cluster, "b")) is not None and not s.healthy and s,
        60,
        "node B to report itself unhealthy",
        details=cluster.diagnose,
    )
    assert "Docker engine" in status.problem and b.host in status.problem, status.problem
    listed = {w["name"]: w for w in queue_status()["workers"]}
    assert listed[b.worker_name]["healthy"] is False and listed[b.worker_name]["problem"], listed
    assert listed[a.worker_name]["healthy"] is True, listed
    ids = held + queued
    wait_until(
        lambda: settled(ids), 600, "every duel to finish on node A", interval=0.5, details=cluster.diagnose
    )
    found = assert_played_once_and_charged_to_nobody(ids)
    played = Counter(cluster.node_of(r["worker"]) for r in found)
    assert played == {"a": len(ids)}, played  # B's engine stayed dead: everything finished on A
    for row in found:
        if row["pk"] in held:  # B's claim failed without counting, then A played the duel in full
            assert row["generation"] >= 2, row
            assert "not counted: the worker was unhealthy" in row["failure_reason"], row
    assert "is unhealthy" in b.log()
    assert worker_status(cluster, "b").healthy is False  # nothing brought it back: its engine is down
    assert_rated_once(ids)


def test_a_node_whose_engine_comes_back_rejoins_and_plays_again(cluster: Cluster) -> None:
    b = cluster["b"]
    if b.engine_running():  # run alone: take the engine down first
        b.kill_engine()
        wait_until(lambda: not worker_status(cluster, "b").healthy, 60, "node B to report itself unhealthy")
    b.start_engine()  # the same command an operator or a service manager runs
    wait_until(
        lambda: worker_status(cluster, "b").healthy,
        60,
        "node B to report itself healthy",
        details=cluster.diagnose,
    )
    wait_until(lambda: "healthy again" in b.log(), 30, "node B to log its recovery")
    ids = short_duels(cluster, 12)
    wait_until(
        lambda: settled(ids), 300, "the duels after B's return", interval=0.5, details=cluster.diagnose
    )
    found = assert_played_once_and_charged_to_nobody(ids)
    played = Counter(cluster.node_of(r["worker"]) for r in found)
    assert played["b"] >= 1 and played["a"] + played["b"] == len(ids), played
    assert_rated_once(ids)


def reaper_rounds(node_log: str) -> int:
    """How many reaper rounds a worker's log shows finished."""
    return len(re.findall(r"Task duel_runner\.reap\[[^]]+\] succeeded", node_log))


def test_agent_containers_lost_with_an_engine_are_removed_once_it_is_back(cluster: Cluster) -> None:
    b = cluster["b"]
    if not cluster.lost_containers:
        pytest.skip("needs the engine-kill test before it (it records the containers B's engine lost)")
    if not b.engine_running():
        b.start_engine()
    wait_until(lambda: worker_status(cluster, "b").healthy, 60, "node B to report itself healthy")
    # The engine-kill test recorded the containers B's engine held when it died; the engine brings them back.
    # The reaper runs every second on whichever worker takes it (B consumes only while its engine answers):
    # once node B has run a round since, containers of duels that are long over must be gone from its engine.
    rounds = reaper_rounds(b.log())
    wait_until(lambda: reaper_rounds(b.log()) > rounds, 120, "node B to run a reaper round")
    left = {c["Id"] for c in b.agent_containers()} & cluster.lost_containers
    assert not left, f"{len(left)} agent container(s) of finished duels are still in node B's engine"
