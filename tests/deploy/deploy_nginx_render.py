"""Render the committed nginx configuration into a temporary folder so a real nginx can load it.

Only paths, the listen addresses and the upstream change; every directive is the committed one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from deploy_helpers import REPO

NGINX_DIR = REPO / "nginx"


@dataclass
class RenderedNginx:
    """Where the rendered configuration and its folders live."""

    root: Path
    conf: Path
    static: Path
    data: Path
    certbot: Path


def _rewrite(text: str, root: Path, http_port: int, tls_port: int, upstream: str) -> str:
    replacements = [
        ("/etc/nginx/snippets/rl-arena/", f"{root}/snippets/"),
        ("/srv/static/", f"{root}/static/"),
        ("/srv/data/", f"{root}/data/"),
        ("/var/www/certbot", f"{root}/certbot"),
        ("/var/cache/nginx/rl-arena", f"{root}/cache"),
        ("/etc/letsencrypt/live/arena.example.org/", f"{root}/certs/"),
        ("set $rl_arena_web web:8000;", f"set $rl_arena_web {upstream};"),
        ("listen 80 default_server;", f"listen 127.0.0.1:{http_port} default_server;"),
        ("listen [::]:80 default_server;", ""),
        ("listen 443 ssl http2;", f"listen 127.0.0.1:{tls_port} ssl http2;"),
        ("listen [::]:443 ssl http2;", ""),
    ]
    for old, new in replacements:
        text = text.replace(old, new)
    return text


def render_nginx(
    root: Path,
    *,
    http_port: int,
    upstream: str,
    tls_port: int | None = None,
    mime_types: Path | None = None,
    worker_processes: str = "1",
    worker_connections: int = 256,
) -> RenderedNginx:
    """Write nginx.conf (+ snippets, optional TLS server) under ``root``; return the paths.

    ``worker_processes="auto"`` and ``worker_connections=1024`` are what the official nginx image's own
    nginx.conf sets (benchmarks/bench_web.py runs that way); tests keep one small worker."""
    for sub in ("snippets", "static", "data", "certbot", "certs", "temp", "logs", "cache"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for snippet in (NGINX_DIR / "snippets").glob("*.conf"):
        (root / "snippets" / snippet.name).write_text(
            _rewrite(snippet.read_text(), root, http_port, tls_port or 0, upstream)
        )
    includes = [NGINX_DIR / "conf.d" / "rl-arena.conf"]
    if tls_port is not None:
        includes.append(NGINX_DIR / "tls" / "rl-arena-tls.conf")
    servers = "\n".join(_rewrite(p.read_text(), root, http_port, tls_port or 0, upstream) for p in includes)
    mime = mime_types or Path("/etc/nginx/mime.types")
    conf = root / "nginx.conf"
    # As root, nginx's workers would drop to an unprivileged user that cannot enter pytest's 0700 folders.
    user = "user root root;" if os.geteuid() == 0 else ""
    conf.write_text(
        f"""
{user}
worker_processes {worker_processes};
pid {root}/nginx.pid;
error_log {root}/logs/error.log warn;
events {{ worker_connections {worker_connections}; }}
http {{
    include {mime};
    default_type application/octet-stream;
    access_log {root}/logs/access.log;
    client_body_temp_path {root}/temp/client;
    proxy_temp_path {root}/temp/proxy;
    fastcgi_temp_path {root}/temp/fastcgi;
    uwsgi_temp_path {root}/temp/uwsgi;
    scgi_temp_path {root}/temp/scgi;
{servers}
}}
"""
    )
    return RenderedNginx(
        root=root, conf=conf, static=root / "static", data=root / "data", certbot=root / "certbot"
    )
