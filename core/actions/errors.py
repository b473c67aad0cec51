"""Errors raised by actions, with messages meant for the person who caused them."""


class ActionError(Exception):
    """An action refused to change state; ``str(error)`` explains why to the caller."""


class SubmissionError(ActionError):
    """An upload was refused (bad zip, unknown environment, bad name...). Nothing was stored."""


class StorageFull(ActionError):
    """Our disk (``DATA_DIR``) or the database had no room for what was sent: nothing was stored, the
    sender's request was fine and may be sent again later (HTTP 507)."""
