"""The referee, the agent protocol, the sandboxes and the duel JSON. Public functions: ``run_duel.api``."""
