"""Our agent harnesses. ``arena_harness.py`` is self-contained (copied into agent images)."""

from pathlib import Path

#: The folder holding the harnesses (Python, C++ header, Node.js) that agent images and sandboxes ship.
HARNESS_DIR = Path(__file__).resolve().parent
#: The Python harness: the entry script first, then the modules it loads from its own folder. They are
#: shipped together (agent images' ``/opt/arena``, a container's launch folder, bubblewrap's ``/arena``).
PYTHON_HARNESS_FILES = (
    "arena_harness.py",
    "arena_harness_protocol.py",
    "arena_harness_kaggle.py",
    "arena_harness_rl_arena.py",
    "arena_harness_player.py",
    "arena_harness_warm.py",
)
