"""nginx: the committed configuration loads, and a real nginx in front of a real gunicorn behaves."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from deploy_helpers import REPO, Service, django_env, free_port, wait_for_http
from deploy_nginx_render import NGINX_DIR, RenderedNginx, render_nginx

SECURITY_HEADERS = ("X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy")


def nginx_t(nginx: str, conf: Path) -> subprocess.CompletedProcess[str]:
    """Run ``nginx -t`` against ``conf``."""
    return subprocess.run(
        [nginx, "-t", "-q", "-c", str(conf), "-p", str(conf.parent), "-g", "daemon off;"],
        capture_output=True,
        text=True,
        timeout=30,
    )


def start_nginx(nginx: str, rendered: RenderedNginx, services: list[Service], port: int) -> None:
    """Start nginx in the foreground (a Service) and wait until it answers."""
    service = Service(
        [nginx, "-c", str(rendered.conf), "-p", str(rendered.root), "-g", "daemon off;"],
        log=rendered.root / "logs" / "nginx.out",
    )
    services.append(service)
    wait_for_http(f"http://127.0.0.1:{port}/nginx-health", timeout_s=20)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET ``url``; (status, headers, body) for any status."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_the_http_configuration_passes_nginx_t(nginx_binary: str, tmp_path: Path) -> None:
    rendered = render_nginx(tmp_path, http_port=free_port(), upstream="127.0.0.1:9")
    result = nginx_t(nginx_binary, rendered.conf)
    assert result.returncode == 0, result.stderr


def test_the_tls_server_block_passes_nginx_t_with_a_certificate(nginx_binary: str, tmp_path: Path) -> None:
    rendered = render_nginx(tmp_path, http_port=free_port(), tls_port=free_port(), upstream="127.0.0.1:9")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=arena.test",
         "-keyout", str(tmp_path / "certs" / "privkey.pem"),
         "-out", str(tmp_path / "certs" / "fullchain.pem")],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    result = nginx_t(nginx_binary, rendered.conf)
    assert result.returncode == 0, result.stderr


def test_the_upload_cap_matches_the_submission_cap_of_the_settings() -> None:
    nginx_mb = int(
        re.search(r"client_max_body_size (\d+)m;", (NGINX_DIR / "snippets" / "locations.conf").read_text())[1]
    )
    settings = (REPO / "core" / "settings.py").read_text()
    submission_mb = int(re.search(r'env_int\("SUBMISSION_MAX_MB", (\d+)', settings)[1])
    # A little above the zip cap (multipart envelope), never below it, never far above it.
    assert submission_mb < nginx_mb <= submission_mb + 2


def test_private_files_are_only_reachable_through_x_accel_redirect() -> None:
    locations = (NGINX_DIR / "snippets" / "locations.conf").read_text()
    block = re.search(r"location /_protected/ \{(.*?)\}", locations, re.S)
    assert block is not None and "internal;" in block[1]


@pytest.fixture
def nginx_in_front_of_echo(
    nginx_binary: str, tmp_path: Path, services: list[Service]
) -> tuple[int, RenderedNginx]:
    """A real nginx on a free port proxying to a real gunicorn running the echo app."""
    app_port, port = free_port(), free_port()
    gunicorn = Service(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{app_port}", "--workers", "1",
         "--forwarded-allow-ips", "*", "--chdir", str(Path(__file__).parent), "deploy_echo_wsgi:app"],
        log=tmp_path / "gunicorn.log",
    )  # fmt: skip
    services.append(gunicorn)
    wait_for_http(f"http://127.0.0.1:{app_port}/", timeout_s=30)
    rendered = render_nginx(tmp_path / "nginx", http_port=port, upstream=f"127.0.0.1:{app_port}")
    start_nginx(nginx_binary, rendered, services, port)
    return port, rendered


def test_the_app_sees_the_original_host_client_and_scheme(
    nginx_in_front_of_echo: tuple[int, RenderedNginx],
) -> None:
    port, _ = nginx_in_front_of_echo
    status, headers, body = get(
        f"http://127.0.0.1:{port}/some/page", {"Host": "arena.test", "X-Forwarded-For": "203.0.113.9"}
    )
    assert status == 200
    echo = json.loads(body)
    assert echo["path"] == "/some/page"
    assert echo["host"] == "arena.test"
    assert echo["x_forwarded_for"] == "203.0.113.9, 127.0.0.1"
    assert echo["x_real_ip"] == "127.0.0.1"
    assert echo["x_forwarded_proto"] == "http"
    for name in SECURITY_HEADERS:
        assert name in headers


def test_static_files_are_served_by_nginx_itself(nginx_in_front_of_echo: tuple[int, RenderedNginx]) -> None:
    port, rendered = nginx_in_front_of_echo
    (rendered.static / "site.css").write_text("body { color: teal; }\n")
    status, headers, body = get(f"http://127.0.0.1:{port}/static/site.css")
    assert (status, body) == (200, b"body { color: teal; }\n")
    assert headers["Content-Type"] == "text/css"
    assert "max-age" in headers.get("Cache-Control", "")
    assert get(f"http://127.0.0.1:{port}/static/missing.css")[0] == 404


def test_public_media_such_as_replays_are_served_from_the_data_volume(
    nginx_in_front_of_echo: tuple[int, RenderedNginx],
) -> None:
    port, rendered = nginx_in_front_of_echo
    (rendered.data / "media" / "replays").mkdir(parents=True)
    (rendered.data / "media" / "replays" / "7.json").write_text('{"result": "DRAW"}')
    status, headers, body = get(f"http://127.0.0.1:{port}/media/replays/7.json")
    assert (status, json.loads(body)) == (200, {"result": "DRAW"})
    assert headers["Content-Type"] == "application/json"


def test_private_files_are_not_reachable_directly(nginx_in_front_of_echo: tuple[int, RenderedNginx]) -> None:
    port, rendered = nginx_in_front_of_echo
    (rendered.data / "submissions").mkdir()
    (rendered.data / "submissions" / "secret.txt").write_text("owner only")
    status, headers, body = get(f"http://127.0.0.1:{port}/_protected/submissions/secret.txt")
    assert status == 404
    assert b"owner only" not in body
    for name in SECURITY_HEADERS:
        assert name in headers


def test_the_app_can_hand_a_private_file_to_nginx(nginx_in_front_of_echo: tuple[int, RenderedNginx]) -> None:
    port, rendered = nginx_in_front_of_echo
    (rendered.data / "submissions").mkdir()
    (rendered.data / "submissions" / "secret.txt").write_text("owner only")
    status, _, body = get(f"http://127.0.0.1:{port}/accel/submissions/secret.txt")
    assert (status, body) == (200, b"owner only")


def test_uploads_above_the_cap_are_refused_before_reaching_the_app(
    nginx_in_front_of_echo: tuple[int, RenderedNginx],
) -> None:
    port, _ = nginx_in_front_of_echo
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.putrequest("POST", "/upload")
    conn.putheader("Content-Length", str(60 * 1024 * 1024))
    conn.putheader("Content-Type", "application/zip")
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413
    conn.close()


def test_uploads_under_the_cap_reach_the_app(nginx_in_front_of_echo: tuple[int, RenderedNginx]) -> None:
    port, _ = nginx_in_front_of_echo
    payload = b"z" * (3 * 1024 * 1024)
    request = urllib.request.Request(f"http://127.0.0.1:{port}/upload", data=payload, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert json.loads(response.read())["body_bytes"] == len(payload)


def test_the_django_app_behind_nginx(nginx_binary: str, tmp_path: Path, services: list[Service]) -> None:
    """The real platform: gunicorn as the image starts it (core/gunicorn_conf.py) behind nginx; Host passes
    through, nginx serves /static/ and keeps public pages in its micro-cache, never personal ones."""
    app_port, port = free_port(), free_port()
    data = tmp_path / "data"
    rendered = render_nginx(tmp_path / "nginx", http_port=port, upstream=f"127.0.0.1:{app_port}")
    env = django_env(
        data, ALLOWED_HOSTS="arena.test", STATIC_ROOT=str(rendered.static),
        WEB_CONCURRENCY="1", WEB_PUBLIC_MAX_AGE="600",  # long enough that nothing expires during the test
    )  # fmt: skip
    for command in (["migrate", "--noinput"], ["collectstatic", "--noinput"], ["sync_environments"]):
        done = subprocess.run(
            [sys.executable, "manage.py", *command, "-v", "0"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    services.append(
        Service(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "-c",
                "python:core.gunicorn_conf",
                "core.wsgi",
                "--bind",
                f"127.0.0.1:{app_port}",
            ],
            log=tmp_path / "gunicorn.log",
            env=env,
        )
    )
    wait_for_http(f"http://127.0.0.1:{app_port}/admin/login/", headers={"Host": "arena.test"}, timeout_s=60)
    start_nginx(nginx_binary, rendered, services, port)

    status, headers, body = get(f"http://127.0.0.1:{port}/admin/login/", {"Host": "arena.test"})
    assert status == 200, body[:500]
    assert b"csrfmiddlewaretoken" in body
    assert "X-Content-Type-Options" in headers
    # The Host header reaches Django unchanged: an unknown host is refused by Django, not by nginx.
    assert get(f"http://127.0.0.1:{port}/admin/login/", {"Host": "evil.test"})[0] == 400
    # Django (DEBUG off) does not serve static files: this one can only come from nginx.
    status, headers, _ = get(f"http://127.0.0.1:{port}/static/admin/css/base.css", {"Host": "arena.test"})
    assert status == 200
    assert headers["Content-Type"] == "text/css"
    # The micro-cache: an anonymous public page is served by nginx the second time; a request with a session
    # cookie always reaches the app; the health probe is never cached.
    game = f"http://127.0.0.1:{port}/games/connect-four/"
    first = get(game, {"Host": "arena.test"})
    second = get(game, {"Host": "arena.test"})
    assert first[0] == second[0] == 200 and first[2] == second[2]
    assert (first[1]["X-Cache"], second[1]["X-Cache"]) == ("MISS", "HIT")
    assert "public" in second[1]["Cache-Control"]
    personal = get(game, {"Host": "arena.test", "Cookie": "sessionid=someone"})
    assert personal[0] == 200 and personal[1]["X-Cache"] == "BYPASS"
    probes = [get(f"http://127.0.0.1:{port}/healthz", {"Host": "arena.test"}) for _ in range(2)]
    assert [p[1]["X-Cache"] for p in probes] == ["MISS", "MISS"]
    assert probes[1][0] == 200
