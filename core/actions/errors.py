"""Errors raised by actions, with messages meant for the person who caused them."""


class ActionError(Exception):
    """An action refused to change state; ``str(error)`` explains why to the caller."""


class SubmissionError(ActionError):
    """An upload was refused (bad zip, unknown environment, bad name...). Nothing was stored."""
