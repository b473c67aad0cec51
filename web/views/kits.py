"""What a new agent author downloads: the guide page, each game's starter kit, the light client.

* ``/guide/``: writing an agent (interface, per-game encodings and limits, errors, local tests, CLI).
* ``/games/<slug>/starter.zip``: ``example_players/starter_kits/<package>/`` (a commented ``player.py``
  that plays legal moves, a ``requirements.txt`` example) plus a README with the local test commands for
  this arena and the game's rules (``RULES.md``, from its ``info.yml``), all in one folder
  ``<slug>-starter/``. It uploads unchanged.
* ``/downloads/rl-arena-client.zip``: the ``client/`` distribution with its symlinks resolved (the
  referee, rules and rating packages it shares with the server), so ``pip install <that URL>`` works on
  any machine without a checkout.
"""

from __future__ import annotations

import io
import os
import zipfile
from functools import cache
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET

from core.models import Environment
from web.middleware import submission_limit_mb

#: A fixed timestamp for every zip entry: the same sources always give the same bytes (and content hash).
ZIP_DATE = (2024, 1, 1, 0, 0, 0)
#: What never goes into a generated zip.
_SKIP_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


def starter_kit_dir(slug: str) -> Path | None:
    """``example_players/starter_kits/<package>`` of a game, or ``None`` when it has no kit."""
    folder = Path(settings.BASE_DIR) / "example_players" / "starter_kits" / slug.replace("-", "_")
    return folder if (folder / "player.py").is_file() else None


def _add(zf: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o755 if executable else 0o644) << 16
    zf.writestr(info, data)


def _files(root: Path) -> list[Path]:
    """Regular files under ``root`` (following symlinked folders), caches left out, in a stable order."""
    out: list[Path] = []
    for folder, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_PARTS and not d.endswith(".egg-info"))
        out.extend(Path(folder) / n for n in names if not n.endswith(".pyc"))
    return sorted(out, key=lambda p: p.relative_to(root).as_posix())


def server_url(request: HttpRequest) -> str:
    """This arena's address as the browser reached it, e.g. ``https://arena.example.org``."""
    return request.build_absolute_uri("/").rstrip("/")


def game_summary(env: Environment) -> dict[str, str]:
    """What a game sends an agent, derived from its rules: the observation's shape and the action ids."""
    from environments import UnknownGameError, get_game

    try:
        game = get_game(env.slug)
        obs = game.observation(game.initial_state(), 0)
    except (UnknownGameError, ValueError):
        return {"state": "see the rules", "actions": "see the rules"}
    shape = "(" + ", ".join(str(n) for n in obs.shape) + ("," if len(obs.shape) == 1 else "") + ")"
    return {
        "state": f"numpy array of shape {shape}, {obs.dtype}",
        "actions": f"integers 0..{game.num_actions - 1} ({game.num_actions} in all)",
    }


def _environments() -> list[Environment]:
    return [e for e in Environment.objects.filter(is_active=True).order_by("name") if starter_kit_dir(e.slug)]


def _time_bank_s(slug: str) -> float | None:
    """A game's time bank per match (its ``info.yml``'s ``time_bank_s``); ``None`` if the game is gone."""
    from environments import UnknownGameError, get_info

    try:
        return get_info(slug).time_bank_s
    except UnknownGameError:
        return None


@require_GET
def guide(request: HttpRequest) -> HttpResponse:
    """Writing an agent: the protocol, the limits, the data folder, the errors, local tests, the CLI."""
    from core.actions.agent_data import data_cap_mb

    envs = _environments()
    for env in envs:  # each game's data folder cap (AGENT_DATA_MB or its info.yml's data_mb)
        env.data_mb = data_cap_mb(env.slug)  # type: ignore[attr-defined]  # for the template only
        env.time_bank_s = _time_bank_s(env.slug)  # type: ignore[attr-defined]
    example = next((e for e in envs if e.slug == "connect-four"), envs[0] if envs else None)
    context = {
        "environments": envs,
        "example": example,
        "game_rows": [{"env": e, **game_summary(e)} for e in envs],
        "limit_mb": submission_limit_mb(),
        "pause_after": getattr(settings, "PAUSE_AFTER_ERROR_DUELS", 3),
        "data_mb": settings.AGENT_DATA_MB,
        "local_sandbox": settings.SANDBOX == "local",  # no packages, no C++ nor JavaScript (local_support)
        "server": server_url(request),
        "client_url": request.build_absolute_uri(reverse("web:client-download")),
    }
    return render(request, "web/guide.html", context)


def starter_kit_bytes(env: Environment, server: str, client_url: str) -> bytes:
    """The starter kit zip of ``env`` for an arena at ``server``."""
    folder = starter_kit_dir(env.slug)
    if folder is None:
        raise Http404("This game has no starter kit.")
    top = f"{env.slug}-starter"
    context = {
        "environment": env,
        "top": top,
        "server": server,
        "client_url": client_url,
        "limit_mb": submission_limit_mb(),
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in _files(folder):
            _add(zf, f"{top}/{path.relative_to(folder).as_posix()}", path.read_bytes())
        readme = render_to_string("web/starter/README.md", context)
        _add(zf, f"{top}/README.md", readme.encode())
        rules = f"# {env.name}: rules and what your player sees\n\n{env.description.strip()}\n"
        _add(zf, f"{top}/RULES.md", rules.encode())
    return buf.getvalue()


@require_GET
def starter_kit(request: HttpRequest, slug: str) -> HttpResponse:
    """A game's starter kit as a zip attachment."""
    env = get_object_or_404(Environment, slug=slug, is_active=True)
    data = starter_kit_bytes(
        env, server_url(request), request.build_absolute_uri(reverse("web:client-download"))
    )
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{env.slug}-starter.zip"'
    return response


@cache
def client_zip_bytes(client_dir: str) -> bytes:
    """The light client's source distribution (symlinks resolved) as a zip; built once per process."""
    root = Path(client_dir)
    if not (root / "pyproject.toml").is_file():
        raise Http404("The client package is not part of this installation.")
    top = "rl-arena-client"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in _files(root):
            rel = path.relative_to(root).as_posix()
            if rel.startswith(("build/", "dist/")) or ".egg-info" in rel:
                continue
            _add(zf, f"{top}/{rel}", path.read_bytes())
    return buf.getvalue()


@require_GET
def client_download(request: HttpRequest) -> HttpResponse:
    """``pip install https://<this arena>/downloads/rl-arena-client.zip`` installs ``rl-arena``."""
    data = client_zip_bytes(str(Path(settings.BASE_DIR) / "client"))
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = 'attachment; filename="rl-arena-client.zip"'
    return response
