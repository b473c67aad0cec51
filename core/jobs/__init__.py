"""The job runner every kind of leased background work goes through (see ``runner.py``).

Modules: ``runner`` (:func:`run_job`, :class:`JobKind`), ``heartbeat`` (keeping a claim alive),
``spool`` (outcomes kept on disk while the database is unreachable), ``health`` (the worker's health
probe, its ``WorkerStatus`` row and the consumer step that stops and resumes consuming). Nothing is
imported here, so ``core.celery`` can install the health step before Django's apps are ready.
"""
