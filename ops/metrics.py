"""The arena's Prometheus metrics, read from the database at scrape time.

One exporter serves the whole fleet: every fact a worker, the rater or the web tier produces is already a
row (jobs, leases, results, ratings, worker reports), so ``/metrics`` on any web process reads them with
queries that stay cheap as history grows. Each query is bounded by a partial index (queued and running
jobs, the rating backlog) or by a recent time window on an indexed column (``core_duel_env_recent``), so
a scrape costs the same with ten thousand duels or ten million. Facts that live only on one machine
(``DATA_DIR``'s free space, the result spool) are read from the serving host's ``DATA_DIR``.

Metric names start with ``rl_arena_``; ``docs/DEPLOYMENT.md`` lists each with what it means and what to do
when its alert fires (``prometheus/alerts.yml``).
"""

from __future__ import annotations

import shutil
import statistics
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from core.jobs.health import silent_after_s
from core.jobs.spool import spool_dir

#: Window of the "recent" rates and durations.
RECENT_S = 300
#: At most this many recent duels are read for durations and error kinds (a bounded sample).
SAMPLE_LIMIT = 2000
QUANTILES = (0.5, 0.9, 0.99)


def _quantiles(values: list[float]) -> list[tuple[str, float]]:
    if not values:
        return []
    if len(values) == 1:
        return [(str(q), values[0]) for q in QUANTILES]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return [(str(q), cuts[round(q * 100) - 1]) for q in QUANTILES]


def _dir_stats(path: Path) -> tuple[int, int]:
    """(files, bytes) directly under ``path`` (the spool is flat); (0, 0) when it does not exist."""
    files = size = 0
    try:
        for entry in path.iterdir():
            if entry.is_file():
                files += 1
                size += entry.stat().st_size
    except FileNotFoundError:
        pass
    return files, size


class ArenaCollector(Collector):
    """Collects the arena's gauges from the database on every scrape."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        from core.models import Build, Duel, SmokeTest

        now = timezone.now()
        jobs = GaugeMetricFamily(
            "rl_arena_jobs", "Jobs waiting or running, by kind and state.", labels=["kind", "state"]
        )
        oldest = GaugeMetricFamily(
            "rl_arena_oldest_queued_job_age_seconds",
            "Age of the oldest queued job of each kind (0 when none waits).",
            labels=["kind"],
        )
        expired = GaugeMetricFamily(
            "rl_arena_expired_leases",
            "Running jobs whose lease expired and that the reaper has not re-queued yet.",
            labels=["kind"],
        )
        busy = 0  # running builds, smoke tests and duels: each holds a worker slot
        for kind, model in (("build", Build), ("smoke_test", SmokeTest), ("duel", Duel)):
            queued = model.objects.filter(state=model.queued_state)
            running = model.objects.filter(state=model.running_state)
            n_running = running.count()
            busy += n_running
            jobs.add_metric([kind, "queued"], queued.count())
            jobs.add_metric([kind, "running"], n_running)
            first = queued.aggregate(first=Min("created_at"))["first"]
            oldest.add_metric([kind], (now - first).total_seconds() if first else 0.0)
            expired.add_metric([kind], running.filter(lease_expires_at__lt=now).count())
        yield jobs
        yield oldest
        yield expired

        yield from self._duels(now)
        yield from self._builds()
        yield from self._workers(now, busy)
        yield from self._host()
        yield from self._readiness()

    def _duels(self, now: datetime) -> Iterator[GaugeMetricFamily]:
        from core.models import Duel, Environment, Match

        since = now - timedelta(seconds=RECENT_S)
        recorded = GaugeMetricFamily(
            "rl_arena_duels_recorded_per_second",
            f"Duel results recorded per second over the last {RECENT_S} s, by game.",
            labels=["game"],
        )
        rated = GaugeMetricFamily(
            "rl_arena_duels_rated_per_second",
            f"Ladder results folded into ratings per second over the last {RECENT_S} s, by game.",
            labels=["game"],
        )
        backlog = GaugeMetricFamily(
            "rl_arena_rating_backlog",
            "Finished duels the rater has not consumed yet, by game.",
            labels=["game"],
        )
        backlog_age = GaugeMetricFamily(
            "rl_arena_rating_backlog_oldest_age_seconds",
            "How long the oldest unrated finished duel has waited, by game (0 when none).",
            labels=["game"],
        )
        duration = GaugeMetricFamily(
            "rl_arena_duel_duration_seconds",
            f"Duration of the duels finished in the last {RECENT_S} s (claim to result), by game.",
            labels=["game", "quantile"],
        )
        errors = GaugeMetricFamily(
            "rl_arena_match_errors",
            f"Matches of the duels finished in the last {RECENT_S} s that ended in an error, by game and kind"
            " (INFRA is ours; the others are agents' faults).",
            labels=["game", "kind"],
        )
        for env in Environment.objects.only("id", "slug"):
            game = env.slug
            recent = Duel.objects.filter(environment=env, finished_at__gte=since)
            recorded.add_metric([game], recent.count() / RECENT_S)
            rated.add_metric([game], recent.filter(rated_at__gte=since).count() / RECENT_S)
            waiting = Duel.objects.filter(environment=env, state=Duel.State.FINISHED, rated=False)
            stats = waiting.aggregate(n=Count("id"), first=Min("finished_at"))
            backlog.add_metric([game], stats["n"])
            backlog_age.add_metric([game], (now - stats["first"]).total_seconds() if stats["first"] else 0.0)
            sample = list(
                recent.order_by("-finished_at").values_list("id", "started_at", "finished_at")[:SAMPLE_LIMIT]
            )
            took = sorted((f - s).total_seconds() for _, s, f in sample if s is not None and f is not None)
            for quantile, value in _quantiles(took):
                duration.add_metric([game, quantile], value)
            kinds = (
                Match.objects.filter(duel_id__in=[pk for pk, _, _ in sample])
                .exclude(error_kind="")
                .values_list("error_kind")
                .annotate(n=Count("id"))
            )
            for kind, n in kinds:
                errors.add_metric([game, kind], n)
        yield recorded
        yield rated
        yield backlog
        yield backlog_age
        yield duration
        yield errors

    def _builds(self) -> Iterator[GaugeMetricFamily]:
        from core.models import Build

        duration = GaugeMetricFamily(
            "rl_arena_build_duration_seconds",
            f"Duration of the last {SAMPLE_LIMIT // 10} finished builds.",
            labels=["quantile"],
        )
        values = (
            Build.objects.filter(duration_s__isnull=False)
            .order_by("-id")
            .values_list("duration_s", flat=True)[: SAMPLE_LIMIT // 10]
        )
        for quantile, value in _quantiles(sorted(v for v in values if v is not None)):
            duration.add_metric([quantile], value)
        yield duration

    def _workers(self, now: datetime, busy: int) -> Iterator[GaugeMetricFamily]:
        from core.models import WorkerStatus

        stale_after = silent_after_s()  # the rule queue_status and scheduling use
        counts = {"healthy": 0, "unhealthy": 0, "stale": 0, "stopped": 0}
        slots = dict.fromkeys(counts, 0)
        seen = GaugeMetricFamily(
            "rl_arena_worker_last_seen_age_seconds",
            "Seconds since each running worker last reported.",
            labels=["worker"],
        )
        for worker in WorkerStatus.objects.all():
            age = (now - worker.last_seen).total_seconds()
            if worker.stopped:
                health = "stopped"
            else:
                seen.add_metric([worker.name], age)
                health = "stale" if age > stale_after else "healthy" if worker.healthy else "unhealthy"
            counts[health] += 1
            slots[health] += worker.slots
        workers = GaugeMetricFamily(
            "rl_arena_workers",
            "Workers by health: healthy and unhealthy ones report; stale ones stopped reporting without"
            " saying so; stopped ones shut down cleanly.",
            labels=["health"],
        )
        for health, n in counts.items():
            workers.add_metric([health], n)
        yield workers
        yield seen
        slot_family = GaugeMetricFamily(
            "rl_arena_worker_slots",
            "Jobs the workers can run at once (their pool processes), by the workers' health.",
            labels=["health"],
        )
        for health, n in slots.items():
            slot_family.add_metric([health], n)
        yield slot_family
        free = GaugeMetricFamily(
            "rl_arena_worker_free_slots",
            "Healthy workers' slots not running a build, smoke test or duel (live games aside).",
        )
        free.add_metric([], max(0, slots["healthy"] - busy))
        yield free

    def _host(self) -> Iterator[GaugeMetricFamily]:
        data_dir = Path(settings.DATA_DIR)
        usage = shutil.disk_usage(data_dir)
        free = GaugeMetricFamily("rl_arena_data_dir_free_bytes", "Free bytes on the file system of DATA_DIR.")
        free.add_metric([], usage.free)
        yield free
        total = GaugeMetricFamily("rl_arena_data_dir_size_bytes", "Size of the file system of DATA_DIR.")
        total.add_metric([], usage.total)
        yield total
        files, size = _dir_stats(spool_dir())
        spool = GaugeMetricFamily(
            "rl_arena_spool_files", "Results spooled on this host while the database was unreachable."
        )
        spool.add_metric([], files)
        yield spool
        spool_bytes = GaugeMetricFamily("rl_arena_spool_bytes", "Bytes of the spooled results on this host.")
        spool_bytes.add_metric([], size)
        yield spool_bytes

    def _readiness(self) -> Iterator[GaugeMetricFamily]:
        from ops.readiness import readiness

        ready = GaugeMetricFamily(
            "rl_arena_ready", "Each /readyz check: 1 passes, 0 fails.", labels=["check"]
        )
        for name, problem in readiness().items():
            ready.add_metric([name], 1.0 if problem is None else 0.0)
        yield ready


def registry() -> CollectorRegistry:
    """A registry holding the arena's collector (and nothing of the process: the exporter is global)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(ArenaCollector())
    return reg
