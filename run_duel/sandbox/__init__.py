"""Sandboxes that run one agent each: ``local`` (subprocess, bubblewrap) and ``docker``."""
