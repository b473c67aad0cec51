"""``python -m autoscaler``: run the autoscaler, or show what it would decide.

python -m autoscaler run [--provider local|digitalocean] [--once] [--dry-run] [--interval S]
python -m autoscaler decide --queued 10 --running 2 --oldest-wait 90 --workers 1 [--max-workers 4]
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading

from autoscaler.policy import QueueSnapshot, WorkerView, decide
from autoscaler.runner import policy_from_env, provider_from_env, step
from autoscaler.settings import autoscaler_settings


def _read_queue_from_db() -> QueueSnapshot:
    from autoscaler.queue import read_queue_snapshot

    return read_queue_snapshot()


def run(args: argparse.Namespace) -> int:
    """The loop: one step every ``interval`` seconds until SIGTERM/SIGINT."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core.settings")
    import django

    django.setup()
    policy = policy_from_env()
    provider = provider_from_env(args.provider, dry_run=True if args.dry_run else None)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    logging.getLogger("autoscaler").info("autoscaler started: %s, %s", type(provider).__name__, policy)
    while not stop.is_set():
        try:
            step(provider, policy, _read_queue_from_db)
        except Exception:  # one failed step (API down, DB restarting) must not end the loop
            logging.getLogger("autoscaler").exception("autoscaler step failed; retrying next interval")
        if args.once:
            break
        stop.wait(autoscaler_settings().interval_s if args.interval is None else args.interval)
    return 0


def show_decision(args: argparse.Namespace) -> int:
    """Print the decision for a described situation (no provider, no database)."""
    policy = policy_from_env()
    if args.max_workers is not None:
        policy = type(policy)(**{**policy.__dict__, "max_workers": args.max_workers})
    queue = QueueSnapshot(queued=args.queued, running=args.running, oldest_wait_s=args.oldest_wait)
    workers = [
        WorkerView(f"w{i + 1}", "running", busy=i < args.busy, age_s=3600) for i in range(args.workers)
    ]
    decision = decide(queue, workers, policy)
    print(
        f"desired={decision.desired} start={decision.start} drain={list(decision.drain)} ({decision.reason})"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m autoscaler", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="size the worker pool periodically")
    run_p.add_argument("--provider", choices=["local", "digitalocean"], default=None)
    run_p.add_argument("--once", action="store_true", help="one step, then exit")
    run_p.add_argument("--dry-run", action="store_true", help="print provider calls instead of making them")
    run_p.add_argument("--interval", type=float, default=None, help="default: $AUTOSCALER_INTERVAL_S or 30")
    dec = sub.add_parser("decide", help="print the decision for given numbers")
    dec.add_argument("--queued", type=int, required=True)
    dec.add_argument("--running", type=int, default=0)
    dec.add_argument("--oldest-wait", type=float, default=None)
    dec.add_argument("--workers", type=int, default=0)
    dec.add_argument("--busy", type=int, default=0, help="how many of the workers are busy")
    dec.add_argument("--max-workers", type=int, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="ts=%(asctime)s level=%(levelname)s logger=%(name)s msg=%(message)s"
    )
    return run(args) if args.command == "run" else show_decision(args)


if __name__ == "__main__":
    raise SystemExit(main())
