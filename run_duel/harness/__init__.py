"""Our agent harness. ``arena_harness.py`` is self-contained (copied into agent images)."""
