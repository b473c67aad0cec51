"""A static-files finder that serves each game's ``static/`` folder under ``games/<slug>/``.

The games own their browser files (``environments/<package>/static/renderer.js``); the web app never
copies them. With this finder in ``STATICFILES_FINDERS``, ``{% static "games/connect-four/renderer.js" %}``
works in development (``runserver``) and ``collectstatic`` gathers the files for production.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from django.contrib.staticfiles.finders import BaseFinder
from django.contrib.staticfiles.utils import get_files
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.storage import FileSystemStorage
from django.utils._os import safe_join

import environments

PREFIX = "games"


def _storages() -> dict[str, _GameStorage]:
    storages: dict[str, _GameStorage] = {}
    for slug in environments.all_slugs():
        folder = environments.static_dir(slug)
        if folder.is_dir():
            storage = _GameStorage(location=str(folder))
            storage.prefix = f"{PREFIX}/{slug}"
            storages[slug] = storage
    return storages


class _GameStorage(FileSystemStorage):
    """A game's static folder; ``prefix`` is where collectstatic puts its files (as Django's finders do)."""

    prefix: str = ""


class GameStaticFinder(BaseFinder):
    """Find ``games/<slug>/<file>`` in the game's own ``static/`` folder."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storages = _storages()

    def check(self, **kwargs: Any) -> list:
        """No configuration to check: the registry validates the games."""
        return []

    # As Django 5.2's own finders: [] when nothing is found, and the deprecated all= keyword still taken
    # (the stubs declare None and no keyword).
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str]:  # type: ignore[override]
        """Absolute file path for ``games/<slug>/<rest>`` (a list when ``find_all``)."""
        find_all = find_all or kwargs.get("all", False)
        parts = path.split("/", 2)
        found: list[str] = []
        if len(parts) == 3 and parts[0] == PREFIX and parts[1] in self.storages:
            storage = self.storages[parts[1]]
            try:
                candidate = safe_join(storage.location, parts[2])
            except SuspiciousFileOperation:  # the path escapes the game's folder
                candidate = None
            if candidate and os.path.isfile(candidate):
                found.append(candidate)
        if find_all:
            return found
        return found[0] if found else []

    def list(self, ignore_patterns: Iterable[str] | None):
        """Every game file, as (relative path, storage) pairs, for ``collectstatic``."""
        for storage in self.storages.values():
            for path in get_files(storage, ignore_patterns):
                yield path, storage
