"""The job runner every kind of leased background work goes through (see ``runner.py``).

Modules: ``runner`` (:func:`run_job`, :class:`JobKind`), ``heartbeat`` (keeping a claim alive),
``spool`` (outcomes kept on disk while the database is unreachable, and their drain), ``health`` (the
worker's health probe; which workers count as running). The worker's monitor, the consumer step that
stops and resumes consuming, is ``core.worker``, loaded by worker processes only.
"""
