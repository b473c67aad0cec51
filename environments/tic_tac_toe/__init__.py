"""Tic-tac-toe: see ``info.yml`` for the rules and encodings."""
