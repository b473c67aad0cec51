"""The web platform: pages, forms, the JSON API and the ``rl-arena`` command-line client."""
