"""The only functions that change state. Each owns its transaction; views, tasks and commands call them.

Tasks are sent by name after commit (``core.queue.enqueue_on_commit``), so a rolled-back change never
leaves a message behind, and ``core`` imports none of the packages that run the work.
"""

from core.actions.agent_data import (
    DataSave,
    load_agent_data,
    load_playable_data,
    note_agent_data_problem,
    record_duel_with_data,
    reset_agent_data,
    save_agent_data,
)
from core.actions.builds import claim_build, fail_build, finish_build, rebuild_revision
from core.actions.competitors import set_competitor_status
from core.actions.duels import (
    claim_duel,
    fail_duel,
    record_duel_result,
    record_matches_so_far,
    requeue_duel,
    schedule_duel,
)
from core.actions.environments import sync_environments
from core.actions.errors import ActionError, StorageFull, SubmissionError
from core.actions.jobs import Claim, claim_job, extend_lease, worker_name
from core.actions.leases import (
    begin_reaper_round,
    requeue_expired_leases,
    requeue_failed,
    resend_stale_hints,
    retry_failed_jobs,
)
from core.actions.notifications import mark_notifications_read, notify, send_notification_email
from core.actions.smoke_tests import claim_smoke_test, fail_smoke_test, finish_smoke_test
from core.actions.submissions import reject_revision, requeue_build, requeue_smoke_test, submit_revision

__all__ = [
    "ActionError",
    "Claim",
    "DataSave",
    "StorageFull",
    "SubmissionError",
    "begin_reaper_round",
    "claim_build",
    "claim_duel",
    "claim_job",
    "claim_smoke_test",
    "extend_lease",
    "fail_build",
    "fail_duel",
    "fail_smoke_test",
    "finish_build",
    "finish_smoke_test",
    "load_agent_data",
    "load_playable_data",
    "mark_notifications_read",
    "note_agent_data_problem",
    "notify",
    "rebuild_revision",
    "record_duel_result",
    "record_duel_with_data",
    "record_matches_so_far",
    "reject_revision",
    "requeue_build",
    "requeue_duel",
    "requeue_expired_leases",
    "requeue_failed",
    "requeue_smoke_test",
    "resend_stale_hints",
    "reset_agent_data",
    "retry_failed_jobs",
    "save_agent_data",
    "schedule_duel",
    "send_notification_email",
    "set_competitor_status",
    "submit_revision",
    "sync_environments",
    "worker_name",
]
