"""Broken on purpose: raises while ``player.py`` is being imported (before ``Player`` exists)."""

raise RuntimeError("crash_at_import: this player fails on purpose while being imported")


class Player:  # never reached
    """Unreachable."""
