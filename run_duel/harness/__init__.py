"""Our agent harnesses. ``arena_harness.py`` is self-contained (copied into agent images)."""

from pathlib import Path

#: The folder holding the harnesses (Python, C++ header, Node.js) that agent images and sandboxes ship.
HARNESS_DIR = Path(__file__).resolve().parent
