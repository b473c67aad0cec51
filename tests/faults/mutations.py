r"""Check that the fault suite can fail: each guarantee's one-line mutation must make its test fail.

For every entry of :data:`MUTATIONS` this copies the checkout's tracked files into a scratch folder,
applies the one-line change, runs the guarantee's test there against the real services, and reports
whether the test failed (it must). The unmutated test is run first and must pass. Not part of
``./run_tests.sh`` (it runs the slow fault tests twice per guarantee); run it after changing the job
lifecycle:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rl_arena \
        .venv/bin/python tests/faults/mutations.py [name ...]

Exit status 0 when every mutation was caught.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    before: str
    after: str
    test: str


MUTATIONS = [
    Mutation(
        "fencing",
        "core/actions/jobs.py",
        ".filter(pk=claim.job_id, generation=claim.generation)\n        .filter(_state_q(model, *states))",
        ".filter(pk=claim.job_id)\n        .filter(_state_q(model, *states))",
        "tests/faults/test_fencing_and_time.py::test_a_worker_that_lost_its_lease_cannot_record_the_duel_another_worker_holds",
    ),
    Mutation(
        "database-time",
        "core/actions/jobs.py",
        "    return Now()",
        "    return timezone.now()",
        "tests/faults/test_fencing_and_time.py::test_a_reaper_whose_clock_runs_20_minutes_fast_takes_nothing_from_a_live_worker",
    ),
    Mutation(
        "fencing-token",
        "core/actions/jobs.py",
        '"generation": F("generation") + 1,',
        '"generation": F("generation"),',
        "tests/faults/test_fencing_and_time.py::test_a_worker_that_lost_its_lease_cannot_record_the_duel_another_worker_holds",
    ),
    Mutation(
        "lease-clock-slow",
        "core/actions/jobs.py",
        "ExpressionWrapper(db_now() + timedelta(seconds=seconds),",
        "ExpressionWrapper(models.Value(timezone.now() + timedelta(seconds=seconds)),",
        "tests/faults/test_fencing_and_time.py::test_a_worker_whose_clock_runs_20_minutes_slow_keeps_its_duel",
    ),
    Mutation(
        "lease-clock-fast",
        "core/actions/jobs.py",
        "ExpressionWrapper(db_now() + timedelta(seconds=seconds),",
        "ExpressionWrapper(models.Value(timezone.now() + timedelta(seconds=seconds)),",
        "tests/faults/test_fencing_and_time.py::test_a_worker_whose_clock_runs_20_minutes_fast_loses_its_duel_a_lease_after_it_dies",
    ),
    Mutation(
        "health-gate",
        "core/jobs/health.py",
        "        problem = probe(settings.SANDBOX)",
        "        problem = None",
        "tests/faults/test_worker_health.py::test_a_worker_whose_engine_does_not_answer_takes_no_duel_and_resumes_by_itself",
    ),
    Mutation(
        "uncounted-attempt",
        "core/jobs/runner.py",
        "    counted = problem is None",
        "    counted = True",
        "tests/faults/test_worker_health.py::test_an_engine_lost_mid_job_does_not_count_against_the_duel",
    ),
    Mutation(
        "backoff",
        "core/actions/jobs.py",
        "        job.not_before = db_in(delay) if delay > 0 else None",
        "        job.not_before = None",
        "tests/faults/test_worker_health.py::test_a_fault_that_follows_a_duel_fails_it_after_backoff_and_it_is_retried_once_cleared",
    ),
    Mutation(
        "automatic-retry",
        "duel_runner/reaper.py",
        '        "retried": retry_failed_jobs(),',
        '        "retried": {},',
        "tests/faults/test_worker_health.py::test_a_fault_that_follows_a_duel_fails_it_after_backoff_and_it_is_retried_once_cleared",
    ),
    Mutation(
        "spool",
        "core/jobs/runner.py",
        "        spool.put(kind.name, claim, outcome)",
        "        pass",
        "tests/faults/test_database_outage.py::test_a_result_finished_during_an_outage_is_spooled_and_recorded_once",
    ),
    Mutation(
        "result-in-memory",
        "core/jobs/runner.py",
        "            stored = _record_when_the_database_answers(kind, claim, outcome)",
        "            raise",
        "tests/faults/test_database_outage.py::test_a_result_neither_the_database_nor_a_full_disk_can_take_is_kept_until_the_database_answers",
    ),
    Mutation(
        "database-error-hint",
        "core/worker.py",
        "    send_task(task_name, *args, countdown=delay)",
        "    pass",
        "tests/faults/test_database_outage.py::test_an_outage_before_play_drops_no_hint_and_the_duel_is_rerun_after_its_lease",
    ),
    Mutation(
        "finished-twice",
        "core/actions/duels.py",
        "ACCEPTS_RESULT = (Duel.State.QUEUED, Duel.State.RUNNING, Duel.State.FAILED)",
        "ACCEPTS_RESULT = (Duel.State.QUEUED, Duel.State.RUNNING, Duel.State.FAILED, Duel.State.FINISHED)",
        "tests/faults/test_database_outage.py::test_a_result_whose_commit_reply_was_lost_is_not_recorded_twice",
    ),
    Mutation(
        "rating-trigger",
        "duel_runner/reaper.py",
        '        "rating_triggers": resend_rating_triggers(),',
        '        "rating_triggers": 0,',
        "tests/faults/test_lost_messages.py::test_finished_duels_whose_rating_trigger_was_lost_are_rated_by_the_reaper",
    ),
    Mutation(
        "stale-hints",
        "core/actions/leases.py",
        "    cutoff = db_in(-settings.STALE_QUEUED_SECONDS)",
        "    cutoff = db_in(-settings.STALE_QUEUED_SECONDS)\n"
        "    if (__import__('core.queue').queue.broker_queue_size() or 0) > 0: return {}",
        "tests/faults/test_lost_messages.py::test_a_lost_hint_is_resent_while_the_broker_queue_is_long",
    ),
    Mutation(
        "expired-leases",
        "duel_runner/reaper.py",
        "    expired = requeue_expired_leases() if leases_due else {}",
        "    expired = {}",
        "tests/faults/test_killed_worker.py::test_a_duel_interrupted_by_a_killed_worker_is_rerun_after_its_lease_expires",
    ),
    Mutation(
        "control-queue",
        "core/settings.py",
        'CONTROL_TASKS = ("duel_runner.reap", ',
        "CONTROL_TASKS = (",
        "tests/faults/test_reaper_backlog.py",
    ),
    Mutation(
        "idle-transaction-timeout",
        "core/worker.py",
        '    if created is None or created.vendor != "postgresql" or timeout_s <= 0:',
        "    if True:",
        "tests/faults/test_reaper_backlog.py::test_a_worker_frozen_inside_its_transaction_gives_its_lock_back_to_the_reaper",
    ),
    Mutation(
        "reaper-skips-locked",
        "core/actions/jobs.py",
        "        model.objects.select_for_update(skip_locked=True)",
        "        model.objects.select_for_update()",
        "tests/core/test_core_jobs.py::test_the_reaper_skips_a_row_another_transaction_holds_and_takes_it_next_round",
    ),
    Mutation(
        "orphan-thaw",
        "run_duel/sandbox/orphans.py",
        "        if thaw_container(container_id):",
        "        if False:",
        "tests/faults/test_orphan_containers.py::test_a_worker_killed_while_its_agent_is_frozen_leaves_no_container_and_no_stalled_duel",
    ),
    Mutation(
        "graceful-stop",
        "duel_runner/containers.py",
        '    return settings.SANDBOX == "docker" and bool(settings.WORKER_HEALTH_PROBE)',
        "    return False",
        "tests/faults/test_orphan_containers.py::test_a_graceful_stop_leaves_no_warm_container_behind",
    ),
    Mutation(
        "blob-verify",
        "core/blobs.py",
        "        if size != blob.size or digest.hexdigest() != sha256:",
        "        if False:",
        "tests/core/test_core_blob_store.py::test_an_upload_the_store_cannot_give_back_is_retried_as_ours_never_the_uploaders",
    ),
    Mutation(
        "full-disk-web",
        "core/actions/submissions.py",
        "        if exc.errno in (errno.ENOSPC, errno.EDQUOT):",
        "        if False:",
        "tests/web/test_web_full_disk.py",
    ),
    Mutation(
        "embedded-broker",
        "core/celery.py",
        'TRANSPORT_ALIASES["filesystem"] = "core.broker_fs:Transport"',
        "pass",
        "tests/core/test_core_broker_fs.py",
    ),
    Mutation(
        "lost-hints",
        "duel_runner/reaper.py",
        '        "resent": resend_stale_hints(),',
        '        "resent": {},',
        "tests/faults/test_lost_messages.py::test_work_queued_before_the_broker_was_wiped_is_recovered_from_the_database",
    ),
    Mutation(
        "late-delivery",
        "core/actions/jobs.py",
        "        _state_q(model, queued) | (_state_q(model, running) & Q(lease_expires_at__lt=db_now()))",
        "        Q()",
        "tests/faults/test_duplicate_delivery.py::test_a_task_delivered_after_its_duel_finished_does_nothing",
    ),
    Mutation(
        "unique-versions",
        "core/actions/submissions.py",
        "competitor = Competitor.objects.select_for_update().get(pk=competitor.pk)",
        "competitor = Competitor.objects.get(pk=competitor.pk)",
        "tests/faults/test_concurrent_uploads.py::test_40_concurrent_uploads_are_each_built_and_tested_exactly_once",
    ),
]


def scratch_copy() -> Path:
    """The tracked and modified files of the checkout, in a scratch folder sharing its virtualenv."""
    folder = Path(tempfile.mkdtemp(prefix="mutant-"))
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    for rel in files:
        source = REPO / rel
        if source.is_file():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (folder / ".venv").symlink_to(REPO / ".venv")
    return folder


def run_test(folder: Path, test: str) -> bool:
    """Whether ``test`` passes in ``folder``."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [str(REPO / ".venv/bin/pytest"), "-x", "-q", "-p", "no:cacheprovider", test],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        print("\n".join((done.stdout + done.stderr).splitlines()[-25:]), flush=True)
    return done.returncode == 0


def check(mutation: Mutation) -> bool:
    """Whether the mutation is caught (the test passes unmutated and fails mutated)."""
    folder = scratch_copy()
    try:
        if not run_test(folder, mutation.test):
            print(f"{mutation.name}: the unmutated test FAILS; fix it first")
            return False
        path = folder / mutation.path
        text = path.read_text()
        if text.count(mutation.before) != 1:
            print(f"{mutation.name}: the line to mutate is not found exactly once in {mutation.path}")
            return False
        path.write_text(text.replace(mutation.before, mutation.after))
        print(f"{mutation.name}: mutated, its test must fail now:", flush=True)
        caught = not run_test(folder, mutation.test)
        print(f"{mutation.name}: {'caught' if caught else 'NOT CAUGHT'} ({mutation.path})", flush=True)
        return caught
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(names: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not names or m.name in names]
    results = [check(m) for m in chosen]
    print(f"{sum(results)} of {len(results)} mutations caught")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
