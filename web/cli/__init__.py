"""``rl-arena``: a command-line client for the RL Arena JSON API, written with the standard library only."""
