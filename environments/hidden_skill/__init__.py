"""Hidden skill: a synthetic test game for rating and matchmaking; see ``info.yml`` and ``rules.py``."""
