"""Views: each parses input, calls at most one ``core.actions`` function, and renders."""
