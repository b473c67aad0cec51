"""The ids the pure rating, matchmaking and edition modules key their maps by."""

from __future__ import annotations

from typing import Any, TypeAlias

#: A competitor's, revision's or duel's id: a database key (int) on the server, a folder name (str) in the
#: light client. Any hashable value works. It is ``Any`` rather than ``Hashable`` because each caller keys
#: its own maps by its concrete type and a ``dict`` is invariant in its key: ``dict[int, Rating]`` is not a
#: ``dict[Hashable, Rating]``.
Id: TypeAlias = Any
