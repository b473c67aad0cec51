"""Connect Four: see ``info.yml`` for the rules and encodings."""
