"""The one settings module of RL Arena. Every value comes from the environment via ``core.config``.

With no variable set, the platform runs embedded: SQLite under ``data/``, the Kombu filesystem broker under
``data/broker/`` and the local sandbox. Every variable is documented in ``example.env``.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from core.client_address import parse_proxies
from core.config import (
    DatabaseUrl,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_json_object,
    env_list,
    env_path,
    env_rate_limits,
    env_secret,
    env_str,
    load_env_file,
    parse_database_url,
)
from envsettings import SettingsError
from run_duel.api import RegistryConfig, run_duel_settings

BASE_DIR = Path(__file__).resolve().parent.parent
load_env_file(env_path("ENV_FILE", BASE_DIR / ".env"))

DEBUG = env_bool("DEBUG", False)
DATA_DIR = env_path("DATA_DIR", BASE_DIR / "data")

# --- secrets -------------------------------------------------------------------------------------------
# SECRET_KEY / SECRET_KEY_FILE; if neither is set, a random key is generated once and kept in
# DATA_DIR/secret_key (0600). No key is ever hard-coded. Several web machines must share one key: set it.
_secret = env_secret("SECRET_KEY")
if not _secret:
    _key_file = DATA_DIR / "secret_key"
    try:
        if not _key_file.exists():
            _key_file.parent.mkdir(parents=True, exist_ok=True)
            _tmp_key = _key_file.with_name(f".secret_key.{os.getpid()}")
            fd = os.open(_tmp_key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(50))
            try:  # link: atomic and never overwrites, so concurrent first starts agree on one key
                os.link(_tmp_key, _key_file)
            except FileExistsError:
                pass
            finally:
                _tmp_key.unlink()
        _secret = _key_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ImproperlyConfigured(
            f"SECRET_KEY is not set and {_key_file} cannot be created or read ({exc}); "
            "set SECRET_KEY or SECRET_KEY_FILE"
        ) from exc
if len(_secret) < 32 and not DEBUG:
    raise ImproperlyConfigured("SECRET_KEY must be at least 32 characters long")
SECRET_KEY = _secret

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)

# --- applications --------------------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "core.apps.CoreConfig",
    # Other project apps (web, ...) append themselves here.
    "rest_framework",
    "drf_spectacular",
    "web.apps.WebConfig",
    "tournament_manager.apps.TournamentManagerConfig",
    "ops.apps.OpsConfig",  # backup, restore and prune_data commands; Sentry
    *env_list("EXTRA_INSTALLED_APPS", []),
]

MIDDLEWARE = [
    # Answers the balancer's /healthz probe before anything else runs (web/views/health.py).
    "web.views.health.HealthzMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Refuses bodies over the upload cap from Content-Length alone, before CSRF or forms read them.
    "web.middleware.UploadSizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "core.urls"
WSGI_APPLICATION = "core.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database ------------------------------------------------------------------------------------------
_database_url = env_str("DATABASE_URL", "") or ""
_db = (
    parse_database_url(_database_url, base_dir=BASE_DIR)
    if _database_url
    else DatabaseUrl(engine="django.db.backends.sqlite3", name=str(DATA_DIR / "db.sqlite3"))
)
if _db.engine.endswith("sqlite3"):
    if _db.name != ":memory:":
        Path(_db.name).parent.mkdir(parents=True, exist_ok=True)
    DATABASES: dict[str, dict[str, Any]] = {
        "default": {
            "ENGINE": _db.engine,
            "NAME": _db.name,
            "OPTIONS": {
                # BEGIN IMMEDIATE: a writing transaction takes the write lock up front, so two processes
                # never deadlock upgrading read locks; "timeout" waits for the lock instead of failing.
                "transaction_mode": "IMMEDIATE",
                "timeout": env_int("SQLITE_TIMEOUT_S", 30, minimum=1),
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # A file (not :memory:) so worker processes started by tests can see the test database.
            "TEST": {"NAME": str(Path(_db.name).with_name("test_" + Path(_db.name).name))}
            if _db.name != ":memory:"
            else {},
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": _db.engine,
            "NAME": _db.name,
            "USER": _db.user,
            "PASSWORD": _db.password or (env_secret("DATABASE_PASSWORD") or ""),
            "HOST": _db.host,
            "PORT": _db.port,
            "OPTIONS": dict(_db.options or {}),
            "CONN_MAX_AGE": env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0),
            "CONN_HEALTH_CHECKS": True,
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- users ---------------------------------------------------------------------------------------------
AUTH_USER_MODEL = "core.User"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = env_str("LOGIN_URL", "/accounts/login/")

# --- email ---------------------------------------------------------------------------------------------
EMAIL_HOST = env_str("EMAIL_HOST", "") or ""
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1, maximum=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "") or ""
EMAIL_HOST_PASSWORD = env_secret("EMAIL_HOST_PASSWORD") or ""
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "RL Arena <noreply@localhost>")

# --- i18n, static, media -------------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = env_path("STATIC_ROOT", DATA_DIR / "static")
MEDIA_URL = "media/"
MEDIA_ROOT = env_path("MEDIA_ROOT", DATA_DIR / "media")
# --- web (pages, JSON API) -----------------------------------------------------------------------------
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "web.finders.GameStaticFinder",  # environments/<game>/static/ served as static/games/<slug>/
]
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
PASSWORD_RESET_TIMEOUT = 3 * 24 * 3600
# The rate limiter (web.ratelimit) counts in the cache: Redis when configured, so all workers share counts.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": env_str("REDIS_URL")}
    if env_str("REDIS_URL", "")
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
# Proxies (addresses or CIDR networks) whose X-Forwarded-For is believed (core/client_address.py): the client
# is the first address, read from the right, that is not one of them. Empty: REMOTE_ADDR, headers ignored.
try:
    RL_ARENA_TRUSTED_PROXIES = parse_proxies(env_list("TRUSTED_PROXIES", []))
except ValueError as _exc:
    raise ImproperlyConfigured(f"TRUSTED_PROXIES: {_exc}") from None
# Logins (core/actions/login_throttle.py): wrong passwords one address may try on one account before each
# further one doubles its wait, and the longest wait. Per-address and per-account limits: RATE_LIMITS.
LOGIN_FREE_FAILURES = env_int("LOGIN_FREE_FAILURES", 5, minimum=1)
LOGIN_BACKOFF_MAX_SECONDS = env_int("LOGIN_BACKOFF_MAX_SECONDS", 900, minimum=1)
# API tokens (core/actions/api_tokens.py): days a new token works (0: never expires).
API_TOKEN_DAYS = env_int("API_TOKEN_DAYS", 90, minimum=0)
# Public pages (web/page_cache.py): how long browsers and nginx may reuse an anonymous response, and how long
# a cached page may show content that changed without a rating change (rating changes show at once).
WEB_PUBLIC_MAX_AGE = env_int("WEB_PUBLIC_MAX_AGE", 5, minimum=0, maximum=3600)
WEB_PAGE_CACHE_SECONDS = env_int("WEB_PAGE_CACHE_SECONDS", 60, minimum=1, maximum=3600)
# Django itself serves STATIC_ROOT at /static/ and MEDIA_ROOT at /media/ (prepare_dev.sh with gunicorn and no
# nginx). Behind nginx (docker-compose) leave it off: nginx serves both.
SERVE_STATIC = env_bool("SERVE_STATIC", False)
# Per-scope (login, signup, password_reset, upload) overrides of web/ratelimit.py's DEFAULT_LIMITS.
RL_ARENA_RATE_LIMITS = env_rate_limits("RATE_LIMITS")
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "web.api.authentication.HashedTokenAuthentication",  # core.models.ApiToken: hashed, expiring
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "RL Arena API",
    "DESCRIPTION": "Games, leaderboards, competitors, revisions (upload a zip), duels and match replays.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "ENUM_NAME_OVERRIDES": {
        "RevisionStateEnum": "core.models.competitor.Revision.State",
        "DuelStateEnum": "core.models.duel.Duel.State",
        "DuelResultEnum": "core.models.duel.Duel.Result",
        "MatchResultEnum": "core.models.duel.Match.Result",
        "CompetitorStatusEnum": "core.models.competitor.Competitor.Status",
    },
}
SUBMISSIONS_DIR = DATA_DIR / "submissions"  # uploaded zips: submissions/<competitor id>/<version>-<hash>.zip
BUILDS_DIR = DATA_DIR / "builds"  # local-backend agent folders

# --- the arena -----------------------------------------------------------------------------------------
SANDBOX = env_choice("SANDBOX", "local", ("local", "docker"))
# The referee's and sandboxes' variables are parsed once, by run_duel.settings (a library without Django);
# here they are read from that object, so a malformed value stops every process at start-up.
try:
    _RUN_DUEL = run_duel_settings()
except SettingsError as _exc:
    raise ImproperlyConfigured(str(_exc)) from None
# Without bubblewrap the local sandbox refuses to start; True runs agents as plain subprocesses that can
# read this machine's secrets, with a warning each duel.
SANDBOX_ALLOW_UNISOLATED = _RUN_DUEL.allow_unisolated
# The host's cgroup file system as the worker sees it; empty: where it is mounted. Used to freeze a waiting
# agent's container between its moves.
AGENT_CGROUP_ROOT = _RUN_DUEL.cgroup_root
# Run each duel's referee and both agents on one free core once they are ready (run_duel/cpu_slots.py).
DUEL_CPU_PINNING = _RUN_DUEL.cpu_pinning
# Warm Docker sandboxes (run_duel/sandbox/docker_warm.py): a container per revision serves many duels, each
# in a fresh agent process; retired after DUEL_SANDBOX_REUSE_DUELS seats or _SECONDS, or anything unexpected.
DUEL_SANDBOX_REUSE = env_bool("DUEL_SANDBOX_REUSE", True)
DUEL_SANDBOX_REUSE_DUELS = env_int("DUEL_SANDBOX_REUSE_DUELS", 200, minimum=1)
DUEL_SANDBOX_REUSE_SECONDS = env_int("DUEL_SANDBOX_REUSE_SECONDS", 600, minimum=1)
DUEL_SANDBOX_REUSE_IDLE = env_int("DUEL_SANDBOX_REUSE_IDLE", 8, minimum=1)
SUBMISSION_MAX_BYTES = env_int("SUBMISSION_MAX_MB", 50, minimum=1) * 1024 * 1024
# Each competitor's persistent data folder (ARENA_DATA_DIR in the sandbox, kept between its duels): its cap
# in MiB, unless the game's info.yml sets data_mb; 0: agents get no data folder at all.
AGENT_DATA_MB = env_int("AGENT_DATA_MB", 10, minimum=0)
# A RUNNING job whose worker sent no heartbeat for LEASE_SECONDS (database time) is re-queued.
LEASE_SECONDS = env_int("LEASE_SECONDS", 15, minimum=2)
HEARTBEAT_SECONDS = env_float("HEARTBEAT_SECONDS", LEASE_SECONDS / 5, minimum=0.2)
if HEARTBEAT_SECONDS >= LEASE_SECONDS:
    raise ImproperlyConfigured("HEARTBEAT_SECONDS must be smaller than LEASE_SECONDS")
MAX_ATTEMPTS = env_int("MAX_ATTEMPTS", 3, minimum=1)  # infrastructure failures before a job is FAILED
# Infrastructure failures re-queue a job after RETRY_BACKOFF_SECONDS x 2^(n-1) (jittered, capped).
RETRY_BACKOFF_SECONDS = env_float("RETRY_BACKOFF_SECONDS", 5.0, minimum=0.0)
RETRY_BACKOFF_MAX_SECONDS = env_float("RETRY_BACKOFF_MAX_SECONDS", 300.0, minimum=0.0)
# A job FAILED by infrastructure faults is retried automatically after FAILED_RETRY_SECONDS x 2^round,
# at most FAILED_RETRY_ROUNDS times (0: only operators re-queue failed jobs).
FAILED_RETRY_SECONDS = env_float("FAILED_RETRY_SECONDS", 600.0, minimum=1.0)
FAILED_RETRY_ROUNDS = env_int("FAILED_RETRY_ROUNDS", 5, minimum=0)
STALE_QUEUED_SECONDS = env_int("STALE_QUEUED_SECONDS", 120, minimum=1)  # re-send hints older than this
REAPER_INTERVAL_SECONDS = env_float("REAPER_INTERVAL_SECONDS", 5.0, minimum=0.5)
# A worker's database session that sits inside an open transaction this long is ended by PostgreSQL
# (core/worker.py): a frozen worker gives its job's row lock back. 0: never.
WORKER_DB_IDLE_TRANSACTION_TIMEOUT_S = env_int(
    "WORKER_DB_IDLE_TRANSACTION_TIMEOUT_S", LEASE_SECONDS, minimum=0
)
# How often each worker checks its sandbox (Docker engine, registry), reports to WorkerStatus and
# records results spooled while the database was unreachable.
WORKER_HEALTH_INTERVAL_SECONDS = env_float("WORKER_HEALTH_INTERVAL_SECONDS", 2.0, minimum=0.1)
# Dotted path of the health probe: () -> None when healthy, else a one-line reason.
WORKER_HEALTH_PROBE = env_str("WORKER_HEALTH_PROBE", "run_duel.health:sandbox_problem") or ""
ORPHAN_CONTAINER_MAX_AGE_SECONDS = env_int("ORPHAN_CONTAINER_MAX_AGE_SECONDS", 3 * 3600, minimum=60)
BUILD_LOG_MAX_CHARS = env_int("BUILD_LOG_MAX_CHARS", 200_000, minimum=1000)
PLAYER_LOG_MAX_CHARS = env_int("PLAYER_LOG_MAX_CHARS", 256 * 1024, minimum=1000)
DB_SAVE_RETRIES = env_int("DB_SAVE_RETRIES", 6, minimum=1)  # then the result is spooled under DATA_DIR/spool
# A worker whose spool's disk has less free space than this (MiB) is unhealthy: it takes no job.
SPOOL_MIN_FREE_MB = env_int("SPOOL_MIN_FREE_MB", 64, minimum=0)
RATING_TASK_NAME = env_str("RATING_TASK_NAME", "tournament_manager.rate_environment") or ""
# Pause a competitor whose playing revision erred in at least half the matches of each of its last N rated
# duels (0: never); a newer revision that passes its smoke test lifts the pause.
PAUSE_AFTER_ERROR_DUELS = env_int("PAUSE_AFTER_ERROR_DUELS", 3, minimum=0)
# Live play (a person against an agent) and challenges.
PLAY_INACTIVITY_SECONDS = env_float("PLAY_INACTIVITY_SECONDS", 120.0, minimum=1.0)
PLAY_POLL_SECONDS = env_float("PLAY_POLL_SECONDS", 0.1, minimum=0.01)
CHALLENGES_PER_DAY = env_int("CHALLENGES_PER_DAY", 5, minimum=0)
# Live games one person may have running at once; more wait in order (core/actions/play.py).
PLAY_MAX_LIVE_PER_USER = env_int("PLAY_MAX_LIVE_PER_USER", 2, minimum=1)
# Absolute links in notification emails ("https://arena.example.org"); empty: site paths only.
SITE_URL = (env_str("SITE_URL", "") or "").rstrip("/")

# --- agent images: the registry and each worker's image cache (run_duel/registry.py, sandbox/images.py) --
# AGENT_REGISTRY: [http://|https://]host[:port][/prefix]; empty or "none": no registry, agent images stay in
# the Docker engine that built them (one machine only). Parsed by run_duel.settings (see above); the address
# is checked here once, loudly, at start-up.
AGENT_REGISTRY_USERNAME = _RUN_DUEL.registry_username
AGENT_REGISTRY_PASSWORD = _RUN_DUEL.registry_password
AGENT_REGISTRY_API_URL = _RUN_DUEL.registry_api_url
# Bytes of agent images each worker host keeps (the pull-time trim of run_duel/sandbox/images.py and the image
# collector of duel_runner/image_gc.py); least recently used unused ones go first (0: no limit).
AGENT_IMAGE_CACHE_BYTES = _RUN_DUEL.image_cache_bytes
# How often the image collector removes images of revisions that can no longer play (duel_runner/image_gc.py).
IMAGE_GC_INTERVAL_SECONDS = env_float("IMAGE_GC_INTERVAL_SECONDS", 600.0, minimum=10.0)
# The image collector also deletes retired revisions' images from AGENT_REGISTRY (only for a registry this
# deployment alone uses, with deletes enabled; its garbage-collect then frees the layers).
AGENT_REGISTRY_DELETE_RETIRED = env_bool("AGENT_REGISTRY_DELETE_RETIRED", False)
# The image collector never removes an image built or launched on its host this recently (seconds).
IMAGE_GC_GRACE_SECONDS = env_float("IMAGE_GC_GRACE_SECONDS", 3600.0, minimum=0.0)


def _agent_registry() -> str:
    """``AGENT_REGISTRY``, refused at start-up unless the workers can use it as it is."""
    try:
        RegistryConfig.from_env()
    except SettingsError as exc:
        raise ImproperlyConfigured(str(exc)) from None
    return _RUN_DUEL.registry


AGENT_REGISTRY = _agent_registry()

# --- Celery --------------------------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "") or ""
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "") or REDIS_URL or "filesystem://"
if CELERY_BROKER_URL == "filesystem://":
    CELERY_BROKER_URL = "filesystem://localhost//"  # same transport; spares Kombu's "no hostname" warning
BROKER_DIR = DATA_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    for _sub in ("queue", "processed", "control"):
        (BROKER_DIR / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
    }
else:
    # Redis re-delivers an un-acknowledged message after this long. A duplicate is harmless (the claim
    # fails), so this only needs to exceed a normal task's duration; leases recover lost work sooner.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("BROKER_VISIBILITY_TIMEOUT_SECONDS", 2 * 3600, minimum=60)
    }
CELERY_WORKER_CONCURRENCY = env_int("WORKER_CONCURRENCY", 2, minimum=1)
# Hard cap on one task (a hung build or duel): the child is killed, its lease expires, the reaper re-queues.
CELERY_TASK_TIME_LIMIT = env_int("TASK_TIME_LIMIT_SECONDS", 3 * 3600, minimum=60)
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "arena")
# A queue of its own for the publisher's tasks (docker-compose: "publisher", consumed by the publisher
# service, the only one that needs git credentials); empty: they run on the default queue like the rest.
PUBLISHER_QUEUE = env_str("PUBLISHER_QUEUE", "") or ""
LIVE_PLAY_QUEUE = env_str("LIVE_PLAY_QUEUE", "") or ""
# The control plane's own queue (docker-compose and terraform: "control", served by the `control` service,
# a consumer of its own): the reaper (expired leases, lost hints and rating triggers), ratings and
# matchmaking never wait behind the job hints of the default queue, however many are waiting. Empty
# (development): they share the default queue. Every process that sends tasks must agree on it.
CONTROL_QUEUE = env_str("CONTROL_QUEUE", "") or ""
CONTROL_TASKS = ("duel_runner.reap", "tournament_manager.rate_environment", "tournament_manager.matchmake")
CELERY_TASK_ROUTES = {
    pattern: {"queue": queue}
    for pattern, queue in (
        ("publisher.*", PUBLISHER_QUEUE),
        ("duel_runner.play_session", LIVE_PLAY_QUEUE),
        *((task, CONTROL_QUEUE) for task in CONTROL_TASKS),
    )
    if queue
}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_BEAT_SCHEDULE = {
    "duel-runner-reap": {"task": "duel_runner.reap", "schedule": REAPER_INTERVAL_SECONDS},
    # tournament_manager.tasks and publisher.tasks add their periodic tasks (matchmaking, ratings, editions,
    # publishing) to app.conf.beat_schedule when the worker imports them.
}

# --- tournament_manager and publisher (read with these defaults by their packages) ----------------------
TM_RATER = env_choice("TM_RATER", "trueskill", ("trueskill", "openskill"))
TM_MATCHMAKE_INTERVAL_SECONDS = env_float("TM_MATCHMAKE_INTERVAL_SECONDS", 10.0, minimum=0.5)
TM_CHECK_EDITIONS_INTERVAL_SECONDS = env_float("TM_CHECK_EDITIONS_INTERVAL_SECONDS", 300.0, minimum=1.0)
# Ladder duels each game keeps queued or running. Unset: follow the live capacity (TM_LADDER_SLOT_FACTOR x
# the job slots of the healthy workers, WorkerStatus.slots, shared equally by the active games); a number
# fixes it (0: no ladder duels).
TM_LADDER_QUEUE_TARGET = (
    env_int("TM_LADDER_QUEUE_TARGET", 0, minimum=0) if os.environ.get("TM_LADDER_QUEUE_TARGET", "") else None
)
TM_LADDER_SLOT_FACTOR = env_float("TM_LADDER_SLOT_FACTOR", 2.0, minimum=0.1)
# The rater's keyword arguments, e.g. {"beta": 2.5} or {"tau": 0.1} (tournament_manager/rating.py).
TM_RATER_PARAMS = env_json_object("TM_RATER_PARAMS", {})
# Ladder matchmaking; the defaults are tournament_manager.matchmaking.MatchmakingPolicy's (a test checks).
TM_PLACEMENT_MATCHES = env_int("TM_PLACEMENT_MATCHES", 6, minimum=0)
TM_NEIGHBOURS = env_int("TM_NEIGHBOURS", 5, minimum=1)
TM_RANDOM_SHARE = env_float("TM_RANDOM_SHARE", 0.0, minimum=0.0, maximum=1.0)
TM_MAX_IN_FLIGHT = env_int("TM_MAX_IN_FLIGHT", 1, minimum=1)
TM_IDLE_AFTER_SECONDS = env_float("TM_IDLE_AFTER_SECONDS", 3600.0, minimum=0.0)
# Duels per worker-second (tournament_manager/duel_plan.py): a duel's cost is TM_DUEL_FIXED_SECONDS (sandbox
# start/stop) + TM_DUEL_MATCH_SECONDS per match; lengths are even, TM_MIN_DUEL_MATCHES..TM_MAX_DUEL_MATCHES
# (0: 4 x the game's matches_per_duel). Settled pairs rest; TM_DAILY_DUELS caps a competitor's duels a day.
TM_DUEL_FIXED_SECONDS = env_float("TM_DUEL_FIXED_SECONDS", 0.5, minimum=0.0)
TM_DUEL_MATCH_SECONDS = env_float("TM_DUEL_MATCH_SECONDS", 0.05, minimum=0.001)
# On: each game's cost model is fitted to the slot time of its last 200 duels
# (tournament_manager/measured_cost.py); the two above apply until 20 duels finished, or always when off.
TM_DUEL_COST_FROM_DUELS = env_bool("TM_DUEL_COST_FROM_DUELS", True)
TM_MIN_DUEL_MATCHES = env_int("TM_MIN_DUEL_MATCHES", 2, minimum=1)
TM_MAX_DUEL_MATCHES = env_int("TM_MAX_DUEL_MATCHES", 0, minimum=0)
# Ladder duels stop once one player is clearly stronger (run_duel/stopping.py; off: every match is played).
# The worker reads it when it starts a duel, matchmaking when it prices one (duel_plan.expected_matches).
TM_DUEL_STOP_EARLY = env_bool("TM_DUEL_STOP_EARLY", True)
# A pair is settled (not replayed) when the Bradley-Terry fit's 95 % interval of its strength difference
# excludes 0 or lies within +-TM_TIE_MARGIN (log-strength; 0.2 = an expected score within 0.45-0.55).
TM_TIE_MARGIN = env_float("TM_TIE_MARGIN", 0.2, minimum=0.0)
# The leaderboard's fit counts each pair as at most TM_PAIR_MATCHES results; pairs at most TM_NEIGHBOURS
# places apart in its order are settled only after that many matches head to head (0: equal weights, no
# such requirement).
TM_PAIR_MATCHES = env_int("TM_PAIR_MATCHES", 20, minimum=0)
# A near pair whose order the fit does not know yet (neither settled nor a tie) is replayed past
# TM_PAIR_MATCHES up to this many results (0: never; tournament_manager/settled.open_pairs).
TM_OPEN_PAIR_MATCHES = env_int("TM_OPEN_PAIR_MATCHES", 120, minimum=0)
TM_DAILY_DUELS = env_int("TM_DAILY_DUELS", 200, minimum=0)
# The leaderboard marks a rating "provisional" while its sigma is above this (tournament_manager/leaderboard).
TM_PROVISIONAL_SIGMA = env_float("TM_PROVISIONAL_SIGMA", 2.0, minimum=0.0)
# Bradley-Terry tie fits (tournament_manager/tie_fit.py).
TM_TIE_FIT_DELAY_SECONDS = env_float("TM_TIE_FIT_DELAY_SECONDS", 60.0, minimum=0.0)
TM_TIE_FIT_CHECK_INTERVAL_SECONDS = env_float("TM_TIE_FIT_CHECK_INTERVAL_SECONDS", 600.0, minimum=1.0)
TM_TIE_FIT_BOOTSTRAP = env_int("TM_TIE_FIT_BOOTSTRAP", 100, minimum=0)
TM_TIE_FIT_PENDING_GRACE_SECONDS = env_float("TM_TIE_FIT_PENDING_GRACE_SECONDS", 600.0, minimum=0.0)
# Seasons (tournament_manager/seasons.py): finalists of a season's finals, the share cut after each finals
# round, the size of the last round, and how often seasons are checked (s).
SEASON_FINALISTS = env_int("SEASON_FINALISTS", 8, minimum=2)
SEASON_FINALS_CUT = env_float("SEASON_FINALS_CUT", 0.5, minimum=0.1, maximum=0.9)
SEASON_FINALS_LAST = env_int("SEASON_FINALS_LAST", 4, minimum=2)
SEASON_CHECK_INTERVAL_SECONDS = env_float("SEASON_CHECK_INTERVAL_SECONDS", 60.0, minimum=1.0)
PUBLISH_REMOTE = env_str("PUBLISH_REMOTE", "") or ""
PUBLISH_BRANCH = env_str("PUBLISH_BRANCH", "main") or "main"
PUBLISH_GIT_SSH_COMMAND = env_str("PUBLISH_GIT_SSH_COMMAND", "") or None
PUBLISH_RETRY_SECONDS = env_int("PUBLISH_RETRY_SECONDS", 600, minimum=1)
PUBLISH_SWEEP_INTERVAL_SECONDS = env_float("PUBLISH_SWEEP_INTERVAL_SECONDS", 60.0, minimum=1.0)

# --- logging -------------------------------------------------------------------------------------------
LOG_LEVEL = env_choice("LOG_LEVEL", "info", ("debug", "info", "warning", "error")).upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "kv": {"format": "ts=%(asctime)s level=%(levelname)s logger=%(name)s pid=%(process)d msg=%(message)s"}
    },
    "handlers": {
        "stderr": {"class": "logging.StreamHandler", "formatter": "kv", "stream": "ext://sys.stderr"}
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "INFO"},
        "celery": {"level": LOG_LEVEL},
    },
}

# --- Operations (ops/, docs/DEPLOYMENT.md "Monitoring") ---
# GET /metrics (Prometheus text format) answers only `Authorization: Bearer <METRICS_TOKEN>`; unset: 404,
# the endpoint does not exist. Give Prometheus the token through a credentials file.
METRICS_TOKEN = env_secret("METRICS_TOKEN") or ""
# GET /readyz fails its disk check under this many MiB free in DATA_DIR.
READYZ_MIN_FREE_MB = env_int("READYZ_MIN_FREE_MB", 1024, minimum=0)
# Error reports (ops/error_reports.py). ADMINS ("Name <a@b>, c@d") get a mail for each server error when
# mail is configured and DEBUG is off; SENTRY_DSN (opt-in) sends the web's and the workers' exceptions to a
# Sentry-compatible server. Neither ever carries local variables, request bodies or more than an
# exception's first line, where agents' code and logs could be.
ADMINS = [
    (a.split("<")[0].strip() or a, a.split("<")[-1].rstrip(">").strip()) for a in env_list("ADMINS", [])
]
SERVER_EMAIL = env_str("SERVER_EMAIL", DEFAULT_FROM_EMAIL) or DEFAULT_FROM_EMAIL
DEFAULT_EXCEPTION_REPORTER = "ops.error_reports.PrivateExceptionReporter"
DEFAULT_EXCEPTION_REPORTER_FILTER = "ops.error_reports.PrivateExceptionReporterFilter"
SENTRY_DSN = env_secret("SENTRY_DSN") or ""
SENTRY_ENVIRONMENT = env_str("SENTRY_ENVIRONMENT", "production") or "production"
SENTRY_RELEASE = env_str("SENTRY_RELEASE", "") or ""  # Sentry starts in ops.apps.OpsConfig.ready
# Retention (ops/retention.py), in days; 0 keeps forever. Results and ratings are always kept.
RETENTION_MATCH_STATES_DAYS = env_int("RETENTION_MATCH_STATES_DAYS", 0, minimum=0)
RETENTION_RETIRED_REPLAYS_DAYS = env_int("RETENTION_RETIRED_REPLAYS_DAYS", 0, minimum=0)
RETENTION_UNPLAYABLE_ZIPS_DAYS = env_int("RETENTION_UNPLAYABLE_ZIPS_DAYS", 0, minimum=0)
RETENTION_INTERVAL_SECONDS = env_float("RETENTION_INTERVAL_SECONDS", 3600.0, minimum=60.0)
if RETENTION_MATCH_STATES_DAYS or RETENTION_RETIRED_REPLAYS_DAYS or RETENTION_UNPLAYABLE_ZIPS_DAYS:
    CELERY_BEAT_SCHEDULE["ops-prune-data"] = {
        "task": "ops.prune_data",
        "schedule": RETENTION_INTERVAL_SECONDS,
    }
