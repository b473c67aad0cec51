"""Server errors reach operators (ADMINS mail, an opt-in Sentry-compatible server) without agents' secrets."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from error_report_app import SECRET

REPO = Path(__file__).resolve().parents[2]


def _crash(client: Client) -> int:
    response = client.post(
        "/crash/",
        {"player_py": f"print('{SECRET}')"},
        HTTP_AUTHORIZATION=f"Bearer {SECRET}",
        HTTP_COOKIE=f"sessionid={SECRET}",
    )
    return response.status_code


def test_admins_get_a_mail_for_a_server_error_without_the_agents_secrets(settings: Any) -> None:
    settings.ROOT_URLCONF = "error_report_app"
    settings.ADMINS = [("Ops", "ops@example.org")]
    settings.DEBUG = False
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert _crash(Client(raise_request_exception=False)) == 500
    assert len(mail.outbox) == 1
    report = mail.outbox[0]
    assert report.to == ["ops@example.org"]
    text = report.subject + report.body + "".join(str(a) for a in report.alternatives)
    assert "RuntimeError" in text and "the sandbox failed" in text
    assert SECRET not in text


class _Collector(http.server.BaseHTTPRequestHandler):
    received: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        self.received.append(body)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[bytes]]]:
    """A Sentry-compatible ingestion endpoint on this machine, keeping every envelope it receives."""
    _Collector.received = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://publickey@127.0.0.1:{server.server_address[1]}/1", _Collector.received
    finally:
        server.shutdown()


SCRIPT = """
import django
django.setup()
import sentry_sdk
from django.test import Client
from django.test.utils import override_settings
from test_core_error_reports import _crash
with override_settings(ROOT_URLCONF="error_report_app", ALLOWED_HOSTS=["testserver"]):
    print(_crash(Client(raise_request_exception=False)))
sentry_sdk.flush(timeout=10)
"""


def _run(dsn: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SENTRY_")}
    env.update(
        DJANGO_SETTINGS_MODULE="core.settings",
        DATA_DIR=str(tmp_path),
        PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), str(REPO)]),
    )
    env.pop("DATABASE_URL", None)  # the embedded SQLite: the view never touches it
    if dsn:
        env["SENTRY_DSN"] = dsn
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_sentry_reports_are_sent_only_with_a_dsn_and_carry_no_agent_secret(
    collector: tuple[str, list[bytes]], tmp_path: Path
) -> None:
    dsn, received = collector
    quiet = _run("", tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.split()[-1] == "500"
    assert received == []

    loud = _run(dsn, tmp_path)
    assert loud.returncode == 0, loud.stderr
    assert received, "no envelope reached the collector"
    payload = b"".join(received)
    assert SECRET.encode() not in payload
    events = [json.loads(line) for body in received for line in body.splitlines() if b'"exception"' in line]
    assert events, payload[:2000]
    exception = events[0]["exception"]["values"][-1]
    assert exception["type"] == "RuntimeError"
    assert exception["value"].startswith("the sandbox failed")
    frames = exception["stacktrace"]["frames"]
    assert any(f.get("function") == "crash" for f in frames)
    assert all("vars" not in f for f in frames)
