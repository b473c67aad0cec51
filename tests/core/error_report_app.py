"""A URL configuration whose one view fails holding an agent's secrets (test_core_error_reports.py)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

SECRET = "AGENT-PRIVATE-7c1f"


def crash(request: HttpRequest) -> HttpResponse:
    agent_source = f"class Player:  # {SECRET}"  # a local variable holding an agent's code
    raise RuntimeError(f"the sandbox failed\nlast lines of the agent's stderr: {SECRET} {len(agent_source)}")


urlpatterns = [path("crash/", crash)]
