"""RL Arena's light client: local duels, tournaments and smoke tests with the arena's own referee, and
the ``rl-arena`` command to submit agents and fetch results (see ``client/README.md``)."""

__version__ = "0.1.0"
