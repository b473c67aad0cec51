"""Error reports for operators: opt-in Sentry-compatible events and ``ADMINS`` mail, never agents' secrets.

- **Sentry-compatible** (Sentry, GlitchTip, any server speaking its envelope protocol): with ``SENTRY_DSN``
  set, the web and the workers (Django and Celery integrations) send unhandled exceptions and error log
  lines. Without it nothing is ever sent: the SDK is not even initialised.
- **``ADMINS`` mail**: Django's ``mail_admins`` handler mails each server error (500) to ``ADMINS`` when mail
  is configured (``EMAIL_HOST``) and ``DEBUG`` is off.

Both pass through the same privacy rule: a report carries the exception's type, our code's stack (file,
function, line) and the request's method and path, never a frame's local variables, a request's body,
cookies or authorization headers, nor more than the first line of an exception's message (where a
sandbox failure may quote an agent's stderr). Agents' code and logs live in those places, so they never
leave. ``PrivateExceptionReporterFilter`` applies the rule to Django's reports (mail and the 500 page with
``DEBUG``), ``scrub_event`` to Sentry's.
"""

from __future__ import annotations

import logging
from collections.abc import ItemsView
from typing import TYPE_CHECKING, Any, cast

from django.views.debug import ExceptionReporter, SafeExceptionReporterFilter

if TYPE_CHECKING:
    from sentry_sdk.types import Event, Hint

#: An exception message is cut to its first line and this many characters.
MESSAGE_CHARS = 300
_DROPPED_HEADERS = {"authorization", "cookie", "x-csrftoken", "proxy-authorization"}


def _first_line(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:MESSAGE_CHARS] + (" [cut]" if len(line) > MESSAGE_CHARS or "\n" in text.strip() else "")


def scrub_event(event: dict[str, Any], hint: dict[str, Any] | None = None) -> dict[str, Any]:
    """Sentry's ``before_send``: keep what locates the fault, drop what may hold an agent's code or logs."""
    for exception in (event.get("exception") or {}).get("values") or []:
        exception["value"] = _first_line(exception.get("value"))
        for frame in (exception.get("stacktrace") or {}).get("frames") or []:
            for key in ("vars", "pre_context", "context_line", "post_context"):
                frame.pop(key, None)
    for thread in (event.get("threads") or {}).get("values") or []:
        for frame in (thread.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)
    logentry = event.get("logentry")
    if isinstance(logentry, dict):
        logentry["message"] = _first_line(logentry.get("message"))
        logentry.pop("params", None)
        logentry.pop("formatted", None)
    request = event.get("request")
    if isinstance(request, dict):
        for key in ("data", "cookies", "query_string", "env"):
            request.pop(key, None)
        headers = request.get("headers")
        if isinstance(headers, dict):
            request["headers"] = {k: v for k, v in headers.items() if k.lower() not in _DROPPED_HEADERS}
    event.pop("extra", None)
    event.pop("breadcrumbs", None)
    return event


def init_sentry(dsn: str, *, environment: str, release: str) -> None:
    """Start the SDK for this process (called from settings when ``SENTRY_DSN`` is set)."""
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration
    from sentry_sdk.integrations.logging import LoggingIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        release=release or None,
        integrations=[
            DjangoIntegration(),
            CeleryIntegration(),
            LoggingIntegration(level=None, event_level=logging.ERROR),  # no log lines as breadcrumbs
        ],
        send_default_pii=False,
        include_local_variables=False,
        include_source_context=False,
        max_request_body_size="never",
        max_breadcrumbs=0,
        before_send=_before_send,
        traces_sample_rate=0.0,
    )


def _before_send(event: Event, hint: Hint) -> Event | None:
    """``scrub_event`` as Sentry's typed hook (the event is a plain dict at run time)."""
    return cast("Event", scrub_event(cast("dict[str, Any]", event), hint))


class PrivateExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django's error reports (``ADMINS`` mail, the ``DEBUG`` page) without local variables or POST data."""

    def get_post_parameters(self, request: Any) -> dict[str, str]:
        return {}

    def get_traceback_frame_variables(self, request: Any, tb_frame: Any) -> ItemsView[str, Any]:
        return {}.items()


class PrivateExceptionReporter(ExceptionReporter):
    """Django's error report with the exception's message cut to its first line."""

    def get_traceback_data(self) -> dict[str, Any]:
        data = super().get_traceback_data()
        if "exception_value" in data:
            data["exception_value"] = _first_line(str(data["exception_value"]))
        for frame in data.get("frames", []):
            frame["exc_cause"] = None
        return data
