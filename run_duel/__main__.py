"""``python -m run_duel``: play a duel between two agents and print the duel JSON."""

import sys

from run_duel.cli import main

sys.exit(main())
