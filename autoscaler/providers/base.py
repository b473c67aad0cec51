"""The provider interface every worker pool implements."""

from __future__ import annotations

from typing import Protocol

from autoscaler.policy import WorkerView


class Provider(Protocol):
    """A pool of workers the autoscaler can list, grow, drain and shrink."""

    def list_workers(self, busy_claimers: frozenset[str]) -> list[WorkerView]:
        """The pool's workers; ``busy_claimers`` ("host:pid" of running jobs) tells which are busy."""
        ...

    def start(self, count: int) -> list[str]:
        """Start ``count`` new workers; return their names."""
        ...

    def drain(self, name: str) -> None:
        """Stop ``name`` taking new work; it finishes what it runs."""
        ...

    def destroy(self, name: str) -> None:
        """Remove ``name`` for good (only called once it is drained and idle)."""
        ...
