"""``python -m rl_arena_client`` is ``rl-arena``."""

import sys

from rl_arena_client.cli import main

sys.exit(main())
