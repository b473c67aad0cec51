"""What a revision's progress looks like to a person: steps, a headline, and where a failure is explained."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from core.models import Build, Revision, SmokeTest

STEP_NAMES = ("Queued", "Building", "Smoke test", "Ranked")
#: Revision state -> index of the step it is in.
_STEP_OF_STATE: dict[str, int] = {
    Revision.State.UPLOADED: 0,
    Revision.State.BUILDING: 1,
    Revision.State.BUILT: 2,
    Revision.State.BUILD_FAILED: 1,
    Revision.State.TESTING: 2,
    Revision.State.TEST_FAILED: 2,
    Revision.State.ELIGIBLE: 3,
    Revision.State.REJECTED: 0,
}
FINAL_STATES = {
    Revision.State.ELIGIBLE,
    Revision.State.BUILD_FAILED,
    Revision.State.TEST_FAILED,
    Revision.State.REJECTED,
}
FAILED_STATES = FINAL_STATES - {Revision.State.ELIGIBLE}
_ERROR_LINE = re.compile(
    r"(error|exception|traceback|failed|not found|no such file|invalid|timeout|timed out|killed)", re.I
)


@dataclass
class Step:
    """One step of the progress bar: ``status`` is done, current, failed or pending."""

    name: str
    status: str


@dataclass
class Progress:
    """Everything the revision page shows about where a revision stands."""

    state: str
    steps: list[Step]
    headline: str
    is_final: bool
    failed: bool
    failure_title: str = ""
    failure_detail: str = ""
    log_name: str = ""  # "build" or "smoke" when the failure points into a log
    log_line: int | None = None  # 1-based line of the log that explains the failure
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """What a build or smoke test concluded, for a badge: ``code`` picks the colour, ``label`` is shown."""

    code: str
    label: str


def smoke_verdict(smoke: SmokeTest | None) -> Verdict | None:
    """The smoke test's outcome, not its job state: a job that ran to the end (``SUCCEEDED``) may well
    have found that the agent broke a rule (``passed`` false)."""
    if smoke is None:
        return None
    if smoke.state == SmokeTest.State.SUCCEEDED:
        return Verdict("PASSED", "passed") if smoke.passed else Verdict("FAILED", "failed")
    if smoke.state == SmokeTest.State.FAILED:
        return Verdict("ERROR", "could not run")  # our infrastructure, never the agent
    return Verdict(smoke.state, smoke.get_state_display())


def build_verdict(build: Build | None) -> Verdict | None:
    """The build's outcome: built, failed, or still queued / running."""
    if build is None:
        return None
    if build.state == Build.State.SUCCEEDED:
        return Verdict("BUILT_OK", "built")
    if build.state == Build.State.FAILED:
        return Verdict("FAILED", "failed")
    return Verdict(build.state, build.get_state_display())


def first_error_line(log: str) -> int | None:
    """1-based number of the first log line that looks like an error (the last such line of a traceback
    block is usually the message, so a traceback points at its final line)."""
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Traceback"):
            j = i + 1
            while j < len(lines) and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
                j += 1
            return min(j, len(lines) - 1) + 1
        if _ERROR_LINE.search(line):
            return i + 1
    return None


def revision_progress(revision: Revision, build: Build | None, smoke: SmokeTest | None) -> Progress:
    """Progress of ``revision`` given its latest build and smoke test (either may be ``None``)."""
    state = revision.state
    current = _STEP_OF_STATE.get(state, 0)
    failed = state in FAILED_STATES
    steps = []
    for i, name in enumerate(STEP_NAMES):
        if state == Revision.State.ELIGIBLE or i < current:
            status = "done"
        elif i == current:
            status = "failed" if failed else "current"
        else:
            status = "pending"
        steps.append(Step(name, status))
    progress = Progress(
        state=state,
        steps=steps,
        headline=_headline(revision),
        is_final=state in FINAL_STATES,
        failed=failed,
    )
    if state == Revision.State.BUILD_FAILED:
        progress.failure_title = "The build failed"
        progress.failure_detail = (
            revision.error_message or (build.error if build else "") or "No reason given."
        )
        log = _loaded_log(build)
        if log:
            progress.log_name, progress.log_line = "build", first_error_line(log)
    elif state == Revision.State.TEST_FAILED:
        progress.failure_title = "The smoke test failed"
        progress.failure_detail = (
            revision.error_message
            or (smoke.reason if smoke else "")
            or "The agent broke a rule in self-play."
        )
        log = _loaded_log(smoke)
        if log:
            progress.log_name, progress.log_line = "smoke", first_error_line(log)
    elif state == Revision.State.REJECTED:
        progress.failure_title = "The upload was rejected"
        progress.failure_detail = revision.error_message or "An operator or a later check refused it."
    return progress


def _loaded_log(job: Build | SmokeTest | None) -> str:
    """The job's log if it was loaded; a deferred log (viewer not allowed to see it) is never fetched."""
    if job is None or "log" in job.get_deferred_fields():
        return ""
    return job.log


def _headline(revision: Revision) -> str:
    headlines: dict[str, str] = {
        Revision.State.UPLOADED: "Uploaded, waiting for a builder…",
        Revision.State.BUILDING: "Building the agent…",
        Revision.State.BUILT: "Built, waiting for the smoke test…",
        Revision.State.TESTING: "Smoke test: playing against itself…",
        Revision.State.ELIGIBLE: "Ranked: this revision plays on the ladder.",
        Revision.State.BUILD_FAILED: "Build failed.",
        Revision.State.TEST_FAILED: "Smoke test failed.",
        Revision.State.REJECTED: "Rejected.",
    }
    return headlines.get(revision.state, revision.get_state_display())
