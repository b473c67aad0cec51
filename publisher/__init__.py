"""Publishing public submissions to a git repository (see README.md)."""
