"""Environment parsing fails loudly, naming the variable; DATABASE_URL parsing."""

from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from core.config import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_json_object,
    env_list,
    env_rate_limits,
    env_secret,
    load_env_file,
    parse_database_url,
)
from tests.django_start import load_settings_in_a_new_process

REPO = Path(__file__).resolve().parents[2]


def test_env_int_names_the_variable_on_a_bad_value(monkeypatch):
    monkeypatch.setenv("LEASE_SECONDS", "ten")
    with pytest.raises(ImproperlyConfigured, match="LEASE_SECONDS='ten' is not an integer"):
        env_int("LEASE_SECONDS", 60)


def test_env_int_enforces_bounds(monkeypatch):
    monkeypatch.setenv("WORKERS", "0")
    with pytest.raises(ImproperlyConfigured, match="WORKERS=0 must be >= 1"):
        env_int("WORKERS", 2, minimum=1)


def test_env_int_uses_the_default_when_unset(monkeypatch):
    monkeypatch.delenv("SOME_UNSET_VAR", raising=False)
    assert env_int("SOME_UNSET_VAR", 7) == 7


def test_env_float_enforces_an_upper_bound(monkeypatch):
    monkeypatch.setenv("TM_RANDOM_SHARE", "1.5")
    with pytest.raises(ImproperlyConfigured, match=r"TM_RANDOM_SHARE=1\.5 must be <= 1\.0"):
        env_float("TM_RANDOM_SHARE", 0.0, minimum=0.0, maximum=1.0)


@pytest.mark.parametrize(
    ("raw", "message"), [("{beta: 2}", "is not JSON"), ("[2.5]", "must be a JSON object")]
)
def test_env_json_object_refuses_what_is_not_an_object(monkeypatch, raw, message):
    monkeypatch.setenv("TM_RATER_PARAMS", raw)
    with pytest.raises(ImproperlyConfigured, match=f"TM_RATER_PARAMS=.*{message}"):
        env_json_object("TM_RATER_PARAMS", {})
    monkeypatch.setenv("TM_RATER_PARAMS", '{"beta": 2.5}')
    assert env_json_object("TM_RATER_PARAMS", {}) == {"beta": 2.5}


def test_rate_limits_are_scope_hits_per_seconds(monkeypatch):
    monkeypatch.setenv("RATE_LIMITS", "login=3/60, upload=0/3600")
    assert env_rate_limits("RATE_LIMITS") == {"login": (3, 60), "upload": (0, 3600)}
    monkeypatch.setenv("RATE_LIMITS", "login=3 per minute")
    with pytest.raises(
        ImproperlyConfigured, match="RATE_LIMITS: 'login=3 per minute' is not scope=hits/seconds"
    ):
        env_rate_limits("RATE_LIMITS")
    monkeypatch.delenv("RATE_LIMITS")
    assert env_rate_limits("RATE_LIMITS") == {}


def test_env_bool_rejects_ambiguous_values(monkeypatch):
    monkeypatch.setenv("DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="DEBUG='maybe' is not a boolean"):
        env_bool("DEBUG", False)


def test_env_choice_lists_the_choices(monkeypatch):
    monkeypatch.setenv("SANDBOX", "vm")
    with pytest.raises(ImproperlyConfigured, match="local, docker"):
        env_choice("SANDBOX", "local", ("local", "docker"))


def test_env_list_splits_on_commas(monkeypatch):
    monkeypatch.setenv("ALLOWED_HOSTS", "a.example, b.example,,")
    assert env_list("ALLOWED_HOSTS", []) == ["a.example", "b.example"]


def test_secret_is_read_from_its_file_variant(monkeypatch, tmp_path):
    secret = tmp_path / "key"
    secret.write_text("s3cret\n")
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.setenv("SECRET_KEY_FILE", str(secret))
    assert env_secret("SECRET_KEY") == "s3cret"


def test_secret_set_twice_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("SECRET_KEY", "a")
    monkeypatch.setenv("SECRET_KEY_FILE", str(tmp_path / "key"))
    with pytest.raises(ImproperlyConfigured, match="either SECRET_KEY or SECRET_KEY_FILE"):
        env_secret("SECRET_KEY")


def test_unreadable_secret_file_names_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv("EMAIL_HOST_PASSWORD", raising=False)
    monkeypatch.setenv("EMAIL_HOST_PASSWORD_FILE", str(tmp_path / "missing"))
    with pytest.raises(ImproperlyConfigured, match="EMAIL_HOST_PASSWORD_FILE"):
        env_secret("EMAIL_HOST_PASSWORD")


def test_postgres_url_is_split_into_django_fields():
    db = parse_database_url("postgres://arena:p%40ss@db.internal:6432/rl_arena?sslmode=require")
    assert (db.engine, db.name, db.user, db.password, db.host, db.port) == (
        "django.db.backends.postgresql",
        "rl_arena",
        "arena",
        "p@ss",
        "db.internal",
        "6432",
    )
    assert db.options == {"sslmode": "require"}


def test_sqlite_url_with_four_slashes_is_absolute():
    assert parse_database_url("sqlite:////var/lib/arena/db.sqlite3").name == "/var/lib/arena/db.sqlite3"


def test_sqlite_url_with_three_slashes_is_relative_to_the_base_dir():
    assert (
        parse_database_url("sqlite:///data/db.sqlite3", base_dir=Path("/srv")).name == "/srv/data/db.sqlite3"
    )


@pytest.mark.parametrize("url", ["mysql://x/y", "postgres://host/", "sqlite://"])
def test_unusable_database_urls_are_refused(url):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        parse_database_url(url)


def test_env_file_does_not_override_the_process_environment(monkeypatch, tmp_path):
    env_file = tmp_path / ".env"
    env_file.write_text("# comment\nexport ARENA_T1='from-file'\nARENA_T2=from-file\n")
    monkeypatch.setenv("ARENA_T2", "from-env")
    monkeypatch.delenv("ARENA_T1", raising=False)
    load_env_file(env_file)
    import os

    assert (os.environ["ARENA_T1"], os.environ["ARENA_T2"]) == ("from-file", "from-env")
    monkeypatch.delenv("ARENA_T1")


def test_example_env_documents_every_variable_the_settings_read():
    import re

    settings_src = (REPO / "core" / "settings.py").read_text()
    read = set(
        re.findall(
            r'env_(?:str|bool|int|float|list|choice|path|secret|required|json_object|rate_limits)\("([A-Z_]+)"',
            settings_src,
        )
    )
    documented = set(re.findall(r"^#? ?([A-Z_]+)=", (REPO / "example.env").read_text(), re.MULTILINE))
    assert read - documented == set()


def test_settings_load_from_example_env(tmp_path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "DEBUG")}
    env.update(
        ENV_FILE=str(REPO / "example.env"), DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="core.settings"
    )
    code = "from django.conf import settings as s; print(s.SANDBOX, s.CELERY_BROKER_URL, s.DEBUG)"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["local", "filesystem://localhost//", "False"]
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600


def test_a_bad_value_stops_the_settings_with_the_variable_name(tmp_path):
    out = load_settings_in_a_new_process({"DATA_DIR": str(tmp_path), "LEASE_SECONDS": "soon"})
    assert out.returncode != 0
    assert "LEASE_SECONDS='soon' is not an integer" in out.stderr


def test_publisher_and_live_game_tasks_get_their_own_queues_only_when_named(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "from core.celery import app; "
        "from core.management.commands.run_dev_worker import dev_queues; "
        "route = lambda name: app.amqp.router.route({}, name)['queue'].name; "
        "print(route('publisher.sweep'), route('duel_runner.play_session'), route('duel_runner.run_duel'), "
        "','.join(dev_queues()))"
    )
    queues = []
    for publisher, live in (("", ""), ("publisher", "live")):
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PUBLISHER_QUEUE")}
        env.update(
            DATA_DIR=str(tmp_path),
            DJANGO_SETTINGS_MODULE="core.settings",
            PUBLISHER_QUEUE=publisher,
            LIVE_PLAY_QUEUE=live,
        )
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
        )
        queues.append(out.stdout.split())
    assert queues == [
        ["arena", "arena", "arena", "arena"],
        ["publisher", "live", "arena", "arena,publisher,live"],  # the dev worker serves every queue
    ]


def test_the_ladder_settings_default_to_the_matchmaking_policy_and_reach_it_from_the_environment(tmp_path):
    import json
    import os
    import subprocess
    import sys

    code = (
        "import django, json; django.setup(); "
        "from tournament_manager.actions import ladder_policy, get_environment_rater; "
        "from tournament_manager.matchmaking import MatchmakingPolicy; p = ladder_policy(); "
        "print(json.dumps([p == MatchmakingPolicy(), p.random_share, p.neighbours, p.max_in_flight, "
        "p.idle_after.total_seconds(), get_environment_rater().beta]))"
    )
    seen = []
    for overrides in (
        {},
        {
            "TM_RANDOM_SHARE": "0.25",
            "TM_NEIGHBOURS": "3",
            "TM_MAX_IN_FLIGHT": "2",
            "TM_IDLE_AFTER_SECONDS": "60",
            "TM_RATER_PARAMS": '{"beta": 2.5}',
        },
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TM_") and k != "DATABASE_URL"}
        env.update(DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="core.settings", **overrides)
        code_with_setup = "import django; django.setup(); " + code
        out = subprocess.run(
            [sys.executable, "-c", code_with_setup],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        seen.append(json.loads(out.stdout.splitlines()[-1]))
    assert seen[0] == [True, 0.0, 5, 1, 3600.0, 25 / 6]
    assert seen[1] == [False, 0.25, 3, 2, 60.0, 2.5]


def test_the_control_plane_gets_its_own_queue_only_when_named(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "from core.celery import app; "
        "from core.management.commands.run_dev_worker import dev_queues; "
        "route = lambda name: app.amqp.router.route({}, name)['queue'].name; "
        "print(*(route(t) for t in ('duel_runner.reap', 'tournament_manager.rate_environment', "
        "'tournament_manager.matchmake', 'duel_runner.run_duel', 'builder.build_revision')), "
        "','.join(dev_queues()))"
    )
    queues = []
    for control in ("", "control"):
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PUBLISHER_QUEUE")}
        env.update(DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="core.settings", CONTROL_QUEUE=control)
        env.pop("LIVE_PLAY_QUEUE", None)
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True
        )
        queues.append(out.stdout.split())
    assert queues == [
        ["arena", "arena", "arena", "arena", "arena", "arena"],
        # the reaper, ratings and matchmaking never wait behind job hints; the dev worker serves both
        ["control", "control", "control", "arena", "arena", "control,arena"],
    ]
