"""Celery tasks that run smoke tests and duels in sandboxes, and the reaper of lost work."""
