"""The DigitalOcean provider's real request code against a local server speaking the same API subset.

``fake_digitalocean.FakeDigitalOcean`` answers on 127.0.0.1 as DigitalOcean documents (bearer auth,
pagination, 202/204, JSON errors, 429 with Retry-After, 500). A scale-up/scale-down cycle is driven by the
autoscaler's policy from the real queue in the database.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")

import django
import pytest

django.setup()

from deploy_helpers import REPO  # noqa: E402
from django.utils import timezone  # noqa: E402
from fake_digitalocean import FakeDigitalOcean  # noqa: E402
from terraform_render import autoscaler_worker_template  # noqa: E402

from autoscaler.join import check_ticket  # noqa: E402
from autoscaler.policy import ScalingPolicy  # noqa: E402
from autoscaler.providers.digitalocean import DigitalOceanError, DigitalOceanProvider, DropletSpec  # noqa: E402
from autoscaler.queue import read_queue_snapshot  # noqa: E402
from autoscaler.runner import revoke_worker_db_role, step  # noqa: E402

TOKEN = "dop_v1_test_token"
JOIN_KEY = "j" * 64
TAG = "rl-arena-worker-auto"


@pytest.fixture
def fake() -> Iterator[FakeDigitalOcean]:
    server = FakeDigitalOcean(token=TOKEN)
    server.start()
    yield server
    server.stop()


def spec(user_data: str | None = None) -> DropletSpec:
    return DropletSpec(
        region="fra1", size="s-2vcpu-4gb", image="ubuntu-24-04-x64", tag=TAG, name_prefix=TAG,
        user_data=user_data or autoscaler_worker_template(), vpc_uuid="vpc-1", ssh_keys=["aa:bb"],
    )  # fmt: skip


def provider(fake: FakeDigitalOcean, **options) -> tuple[DigitalOceanProvider, list[float]]:
    waits: list[float] = []
    made = DigitalOceanProvider(
        spec(), TOKEN, join_key=JOIN_KEY, api=f"http://127.0.0.1:{fake.server.server_address[1]}/v2",
        sleep=waits.append, **options,
    )  # fmt: skip
    return made, waits


def test_droplets_are_created_one_by_one_each_with_a_ticket_of_its_own(fake: FakeDigitalOcean) -> None:
    do, _ = provider(fake)
    names = do.start(2)
    creates = [r for r in fake.requests if r.method == "POST" and r.path == "/v2/droplets"]
    assert [r.body["name"] for r in creates] == names
    for request in creates:
        assert request.authorization == f"Bearer {TOKEN}"
        assert request.body["tags"] == [TAG] and request.body["vpc_uuid"] == "vpc-1"
    for droplet_id, user_data in fake.user_data.items():
        name = fake.droplets[droplet_id]["name"]
        assert f"RL Arena worker droplet {name}:" in user_data
        ticket = next(line.strip() for line in user_data.splitlines() if line.strip().startswith(name + "."))
        assert check_ticket(JOIN_KEY, ticket)[0] == name
        assert "__JOIN_TICKET__" not in user_data and "__WORKER_NAME__" not in user_data
        assert "10.42.0.5" in user_data  # the main droplet's address, filled in on the main droplet


def test_listing_follows_the_pages(fake: FakeDigitalOcean) -> None:
    do, _ = provider(fake, per_page=2)
    names = do.start(5)
    other = DigitalOceanProvider(spec("#cloud-config\n"), TOKEN, api=do.api)
    other.spec.tag = "someone-else"
    other.start(1)
    assert sorted(v.name for v in do.list_workers()) == sorted(names)
    assert len(set(names)) == 5 and all(len(n) <= 50 for n in names)
    pages = [r.query["page"] for r in fake.requests if r.method == "GET"]
    assert pages == ["1", "2", "3"]
    assert {v.state for v in do.list_workers()} == {"starting"}
    fake.boot_all()
    assert {v.state for v in do.list_workers()} == {"running"}


def test_rate_limits_and_server_errors_are_waited_out_then_reported(fake: FakeDigitalOcean) -> None:
    do, waits = provider(fake, retries=3)
    fake.inject(429, "POST", retry_after="7")
    fake.inject(500, "POST")
    (name,) = do.start(1)
    assert fake.names(TAG) == {name}
    assert waits == [7.0, 1.0]  # Retry-After, then the backoff after a 500
    statuses = [r.status for r in fake.requests]
    assert statuses == [429, 500, 202]

    fake.inject(500, "GET", times=4)
    with pytest.raises(DigitalOceanError, match="HTTP 500 server_error") as failed:
        do.list_workers()
    assert failed.value.status == 500
    fake.inject(429, "GET", retry_after="3600")
    with pytest.raises(DigitalOceanError, match="rate limited for 3600s"):
        do.list_workers()


def test_refusals_are_clear_errors(fake: FakeDigitalOcean) -> None:
    wrong = DigitalOceanProvider(spec(), "dop_v1_wrong", join_key=JOIN_KEY, api=provider(fake)[0].api)
    with pytest.raises(
        DigitalOceanError, match="HTTP 401 Unauthorized: Unable to authenticate you"
    ) as refused:
        wrong.list_workers()
    assert refused.value.status == 401
    bad = DigitalOceanProvider(
        DropletSpec(region="", size="s-1vcpu-1gb", image="ubuntu-24-04-x64", tag=TAG, user_data="#cc\n"),
        TOKEN, api=wrong.api,
    )  # fmt: skip
    with pytest.raises(DigitalOceanError, match="422 unprocessable_entity: missing: region"):
        bad.start(1)
    with pytest.raises(ValueError, match="no join key"):
        DigitalOceanProvider(spec(), TOKEN, api=wrong.api)


def test_a_droplet_already_gone_is_destroyed_without_error(fake: FakeDigitalOcean) -> None:
    destroyed: list[str] = []
    do, _ = provider(fake, on_destroy=destroyed.append)
    (name,) = do.start(1)
    do.list_workers()
    fake.droplets.clear()
    do.destroy(name)
    assert destroyed == [name]


@pytest.fixture
def uploads() -> list:
    """Six uploaded revisions: six QUEUED builds in the database (no broker: hints are sent on commit)."""
    from core.actions import submit_revision
    from core.actions.environments import sync_environments
    from core.management.commands.load_example_players import zip_folder
    from core.management.commands.sync_environments import game_infos
    from core.models import User

    sync_environments(game_infos())
    user = User.objects.create_user(email="fleet@example.com", password=None)
    data = zip_folder(REPO / "example_players" / "random")
    return [submit_revision(user, "tic-tac-toe", f"agent-{i}", data) for i in range(6)]


@pytest.mark.django_db
def test_a_scale_up_and_scale_down_cycle_driven_by_the_queue(fake: FakeDigitalOcean, uploads: list) -> None:
    """Queue depth in the database -> policy -> real API calls; the queue drains, and so does the pool."""
    from core.models import Build

    drained: list[str] = []
    destroyed: list[str] = []

    def on_destroy(name: str) -> None:
        destroyed.append(name)
        revoke_worker_db_role(name)  # the runner's real hook: DROP ROLE IF EXISTS on this database

    do, _ = provider(fake, per_page=2, drain_hook=drained.append, on_destroy=on_destroy)
    policy = ScalingPolicy(min_workers=0, max_workers=3, jobs_per_worker=2, max_step_up=2, max_step_down=1,
                           min_age_before_removal_s=0)  # fmt: skip

    # 6 queued builds at 2 per worker: 3 workers, added 2 per step.
    first = step(do, policy, read_queue_snapshot)
    assert (first.desired, first.start) == (3, 2)
    assert len(fake.names(TAG)) == 2
    fake.inject(429, "GET", retry_after="0")  # a rate-limited list is waited out
    second = step(do, policy, read_queue_snapshot)
    assert second.start == 1 and len(fake.names(TAG)) == 3
    fake.boot_all()
    assert step(do, policy, read_queue_snapshot).is_noop

    # Two builds run on two droplets (claimed as "<droplet>:<pid>"), the rest finished: one worker is enough,
    # and only the idle droplet may go.
    busy = sorted(fake.names(TAG))[:2]
    builds = list(Build.objects.order_by("pk"))
    now = timezone.now()
    for build, host in zip(builds, busy, strict=False):
        Build.objects.filter(pk=build.pk).update(state="RUNNING", worker=f"{host}:4242",
                                                 lease_expires_at=now + timedelta(minutes=5))  # fmt: skip
    Build.objects.exclude(pk__in=[b.pk for b in builds[:2]]).update(state="SUCCEEDED")
    shrink = step(do, policy, read_queue_snapshot)
    assert shrink.desired == 1
    (idle,) = set(fake.names(TAG)) - set(busy)
    assert shrink.drain == (idle,) and drained == [idle]
    assert fake.names(f"{TAG}-draining") == {idle}
    # The drained, idle droplet is deleted on the next step; busy ones are never drained.
    assert step(do, policy, read_queue_snapshot).destroy == (idle,)
    assert fake.names(TAG) == set(busy) and destroyed == [idle]

    # Everything finishes: the pool drains one per step and is destroyed; the account ends empty.
    Build.objects.update(state="SUCCEEDED", worker="")
    for _ in range(6):
        step(do, policy, read_queue_snapshot)
        if not fake.names(TAG):
            break
    assert fake.names(TAG) == set()
    assert sorted(destroyed) == sorted([idle, *busy])
    deletes = [r for r in fake.requests if r.method == "DELETE"]
    assert len(deletes) == 3 and all(r.status == 204 for r in deletes)
    assert all(r.authorization == f"Bearer {TOKEN}" for r in fake.requests)
