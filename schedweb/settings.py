"""Django settings, all from the environment (see README "Configuration").

Extension points: append a new app to PROJECT_APPS and add its URLs in schedweb/urls.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"


def env_bool(name: str, default: bool = False) -> bool:
    """True for 1/true/yes/on (any case), False for anything else; `default` when unset."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_list(name: str, default: str = "") -> list[str]:
    """A comma-separated environment variable as a list without blanks."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG")
# pytest (>= 8.2) sets PYTEST_VERSION; tests get the development key like DEBUG does.
_TESTING = "PYTEST_VERSION" in os.environ

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not (DEBUG or _TESTING):
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (set DEBUG=1 for development).")
    SECRET_KEY = "django-insecure-development-only-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
# Headers for every environment (production adds HSTS and secure cookies).
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

# Content-Security-Policy (schedweb.http.csp): same origin only, no inline script or style but
# per-response nonces. CSP_REPORT_ONLY sends it as Content-Security-Policy-Report-Only;
# CSP_DIRECTIVES = {"img-src": ["'self'", "https://..."]} would replace single directives.
CSP_REPORT_ONLY = env_bool("CSP_REPORT_ONLY")

# Scheduler loop period (seconds) and the simulated node agent (runs tasks for their duration).
SCHEDULE_PERIOD = float(os.environ.get("SCHEDULE_PERIOD", "2"))
# The sharding controller's period (seconds): how often NodeShards' desired nodes are recomputed.
SHARD_CONTROLLER_PERIOD = float(os.environ.get("SHARD_CONTROLLER_PERIOD", "10"))
SIMULATED_AGENT = env_bool("SIMULATED_AGENT")
# The queue of jobs and manifests that name none (created by core migration 0007 when absent,
# protected from deletion, as Volcano's `default` queue).
DEFAULT_QUEUE = os.environ.get("DEFAULT_QUEUE", "default").strip() or "default"
if DEFAULT_QUEUE == "root" or not re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?",
                                                DEFAULT_QUEUE):
    raise ImproperlyConfigured(f"DEFAULT_QUEUE {DEFAULT_QUEUE!r} must be a queue name (letters, digits, '-', "
                               "'_', '.'; not 'root').")
# Demo only (`make run`): a steady trickle of demo jobs (schedweb.scheduling.demo_arrivals).
DEMO_ARRIVALS = env_bool("DEMO_ARRIVALS")
# Scheduler: the cycle process keeps its snapshot between cycles and applies only what changed
# (PostgreSQL; schedweb.scheduling.incremental); a full load every this many cycles regardless
# (0 = never), and every row re-read within SCHEDULER_REREAD_EVERY cycles, a slice per cycle
# (schedweb.scheduling.reread; 0 = off).
SCHEDULER_FULL_RELOAD_EVERY = int(os.environ.get("SCHEDULER_FULL_RELOAD_EVERY", "1800"))
SCHEDULER_REREAD_EVERY = int(os.environ.get("SCHEDULER_REREAD_EVERY", "100"))
# Scheduler: work units one job's evaluation may cost per session (scheduler_core.framework.
# work_budget; 0 = unlimited, unset = the scheduler's default): over it the job is deferred to the
# next cycle (reason Deferred). Every session of this process: cycles, dry runs, previews, forecasts.
SCHEDULER_WORK_BUDGET: int | None = None
if os.environ.get("SCHEDULER_WORK_BUDGET", "").strip():
    if not os.environ["SCHEDULER_WORK_BUDGET"].strip().isdigit():
        raise ImproperlyConfigured("SCHEDULER_WORK_BUDGET must be a whole number of work units "
                                   "(0 = unlimited).")
    SCHEDULER_WORK_BUDGET = int(os.environ["SCHEDULER_WORK_BUDGET"])
# Scheduler: "why these nodes" (schedweb.scheduling.placement_scores): each cycle keeps the node
# scores (top SCHEDULER_RECORD_SCORES nodes, 0 = off) of at most SCHEDULER_RECORD_SCORES_PER_JOB
# tasks a job that it bound or pipelined; not in a burst of more than
# SCHEDULER_RECORD_SCORES_MAX_PENDING pending tasks (recording costs most in a big fill).
SCHEDULER_RECORD_SCORES = int(os.environ.get("SCHEDULER_RECORD_SCORES", "3"))
SCHEDULER_RECORD_SCORES_MAX_PENDING = int(os.environ.get("SCHEDULER_RECORD_SCORES_MAX_PENDING", "2000"))
SCHEDULER_RECORD_SCORES_PER_JOB = int(os.environ.get("SCHEDULER_RECORD_SCORES_PER_JOB", "10"))
# /metrics (schedweb.scheduling.metrics_body): the scheduler's process renders the exposition once
# after each cycle and a scrape serves that body (METRICS_PRERENDER=0: every scrape renders live).
# The body lives in METRICS_BODY_FILE when set, beside a file-backed SQLite database when unset,
# and in the MetricsBody row when set to "" (what PostgreSQL deployments get by default).
METRICS_PRERENDER = env_bool("METRICS_PRERENDER", True)
METRICS_BODY_FILE = os.environ.get("METRICS_BODY_FILE")
# Per-job series (volcano_e2e_job_scheduling_*, volcano_unschedule_task_count):
# at most METRICS_JOB_SERIES_MAX unfinished jobs, newest first (0 = none).
METRICS_JOB_SERIES_MAX = int(os.environ.get("METRICS_JOB_SERIES_MAX", "2000"))
# Forecast (schedweb.scheduling.forecast_task; README "Forecast and previews"): estimated starts
# of waiting jobs, computed off the scheduling path after every FORECAST_EVERY_CYCLES-th cycle
# (0 = never), stopped after FORECAST_CPU_BUDGET_S of CPU, FORECAST_HORIZON_S simulated seconds
# or FORECAST_MAX_STEPS sessions; a queue's typical runtime is the median of its newest
# FORECAST_HISTORY_TASKS finished tasks (for running tasks without a declared duration).
FORECAST_EVERY_CYCLES = int(os.environ.get("FORECAST_EVERY_CYCLES", "15"))
FORECAST_CPU_BUDGET_S = float(os.environ.get("FORECAST_CPU_BUDGET_S", "2"))
FORECAST_HORIZON_S = float(os.environ.get("FORECAST_HORIZON_S", "86400"))
FORECAST_MAX_STEPS = int(os.environ.get("FORECAST_MAX_STEPS", "2000"))
FORECAST_HISTORY_TASKS = int(os.environ.get("FORECAST_HISTORY_TASKS", "200"))

# Apps of this project, in floor order (docs/architecture.md, "Floors"; tests/schedweb/
# test_layering.py): an app imports only apps listed before it, and the API and the dashboard,
# the top floor, never import each other. Order matters to Django only for template lookup.
PROJECT_APPS = [
    "schedweb.http", "schedweb.audit", "schedweb.core", "schedweb.scheduling", "schedweb.api",
    "schedweb.dashboard",
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    *PROJECT_APPS,
]

# The API fast path (schedweb.api.fastpath): cached token-authenticated GETs of the queue tree and
# job lists answered without DRF's view machinery (README "API caching" has the measurements).
API_FAST_PATH = env_bool("API_FAST_PATH", True)
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "schedweb.http.csp.ContentSecurityPolicyMiddleware",  # first: every answer gets the policy
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Request id + request facts for audit entries.
    "schedweb.audit.context.AuditContextMiddleware",
    "schedweb.http.middleware.RequestSizeLimitMiddleware",
    "schedweb.http.request_guard.RequestGuardMiddleware",  # 400 for NUL/control chars in path/query
    "schedweb.http.middleware.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # After the session/auth middleware; answers 429 before a login view checks a password.
    "schedweb.http.login_throttle.LoginThrottleMiddleware",
    # Last, so every middleware above applies to its answers: cached token-authenticated GETs of
    # the queue tree and job list without DRF's view machinery (misses go on to the view).
    *(["schedweb.api.fastpath.FastPathMiddleware"] if API_FAST_PATH else []),
]

# Request bodies (JSON jobs with 10,000 tasks are ~1 MiB; manifests are YAML text) above this
# get 413 from RequestSizeLimitMiddleware, before any parser reads them.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("DATA_UPLOAD_MAX_MEMORY_SIZE", str(10 * 1024 * 1024)))

# Login throttling (schedweb.http.login_throttle), per username and per client address: failures
# before a lock, seconds a failure is remembered, first lock and its cap (doubling in between).
LOGIN_THROTTLE_USER_FAILURES = int(os.environ.get("LOGIN_THROTTLE_USER_FAILURES", "5"))
LOGIN_THROTTLE_IP_FAILURES = int(os.environ.get("LOGIN_THROTTLE_IP_FAILURES", "20"))
LOGIN_THROTTLE_WINDOW = int(os.environ.get("LOGIN_THROTTLE_WINDOW", str(15 * 60)))
LOGIN_THROTTLE_BACKOFF = float(os.environ.get("LOGIN_THROTTLE_BACKOFF", "1"))
LOGIN_THROTTLE_MAX_BACKOFF = float(os.environ.get("LOGIN_THROTTLE_MAX_BACKOFF", "300"))
# Web processes sharing the throttle counters: while Redis is down each process counts alone,
# against 1/THROTTLE_PROCESSES of every limit (schedweb.http.cache_backend.per_process_limit).
THROTTLE_PROCESSES = int(os.environ.get("THROTTLE_PROCESSES") or os.environ.get("WEB_WORKERS") or "2")
LOGIN_THROTTLE_PATHS = ["/admin/login/"]  # plus any URL named "login"
# Proxies of ours in front of the web server, each appending to X-Forwarded-For: every throttle
# (API rates, refused tokens, logins) keys the client as schedweb.http.client_address finds it.
# 0 = REMOTE_ADDR only (the header is the client's to write and is ignored).
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT") or "0")
AUTHENTICATION_BACKENDS = ["schedweb.http.login_throttle.ThrottledModelBackend"]

ROOT_URLCONF = "schedweb.urls"
WSGI_APPLICATION = "schedweb.wsgi.application"
ASGI_APPLICATION = "schedweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'schedweb.sqlite3'}"
DATABASE_URL = os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL
# No per-request health check (a `SELECT 1` round trip on every reused connection, as costly
# as a cached API read's one query): a connection the server dropped fails its first query;
# DatabaseUnavailableMiddleware then closes it and retries a read once, answers a write 503.
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=0 if DEBUG else 60,
                                              conn_health_checks=False)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Only server-side-binding cursors prepare (Django's bind client-side and never do): the
    # token + data-version statement of every API read (schedweb.api.authentication), whose
    # planning cost more than its execution. "off" behind a pooler that cannot keep them.
    _prepare = os.environ.get("DATABASE_PREPARE_THRESHOLD", "1")
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = (
        None if _prepare == "off" else int(_prepare))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server, the scheduler loop and the agent write concurrently: wait for the lock
    # (timeout: SQLite's busy timeout, seconds) and take it at BEGIN (IMMEDIATE) so readers never
    # deadlock on lock upgrades. WAL journal: readers (a scrape, a page) never block the cycle's
    # writes nor the other way round; NORMAL sync is WAL's usual pairing (no fsync per commit).
    DATABASES["default"]["OPTIONS"] = {"transaction_mode": "IMMEDIATE", "timeout": 20,
                                       "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    if DATABASE_URL == DEFAULT_DATABASE_URL:
        VAR_DIR.mkdir(exist_ok=True)  # a fresh clone has no var/ (it is git-ignored)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL") or None
# No REDIS_URL: no broker; the scheduling app then runs its loop in-process (run_scheduler).
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
# The cycle goes to its own queue, consumed by one scheduler worker (docker-compose: `worker`,
# `-Q scheduler --pool=solo`); a worker started without -Q consumes both. One message at a time
# per worker, so a worker that takes over finds the next cycle rather than a prefetched backlog.
# SCHEDULER_SHARDS (comma-separated NodeShard names): beat sends one cycle per shard, to queue
# `scheduler-<name>` (one worker each: `-Q scheduler-<name>`), instead of the unsharded one.
SCHEDULER_SHARDS = [s.strip() for s in os.environ.get("SCHEDULER_SHARDS", "").split(",") if s.strip()]
CELERY_TASK_QUEUES = {"celery": {}, "scheduler": {}, **{f"scheduler-{s}": {} for s in SCHEDULER_SHARDS}}
CELERY_TASK_ROUTES = {"schedweb.scheduling.cycle": {"queue": "scheduler"}}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CACHES = {
    "default": (
        {"BACKEND": "schedweb.http.cache_backend.ResilientRedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL else
        {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "schedweb"}
    ),
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"  # the dashboard's sign-in page
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT") or BASE_DIR / "staticfiles")
if DEBUG or _TESTING:
    # runserver/tests serve static files from the finders; no collectstatic output is expected.
    WHITENOISE_USE_FINDERS = True
    WHITENOISE_AUTOREFRESH = True  # look files up per request: no scan of a missing STATIC_ROOT
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": ("django.contrib.staticfiles.storage.StaticFilesStorage" if DEBUG or _TESTING
                    else "whitenoise.storage.CompressedManifestStaticFilesStorage"),
    },
}

REST_FRAMEWORK: dict = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["schedweb.api.authentication.ApiTokenAuthentication",
                                       "rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "schedweb.api.pagination.ApiPagination",
    "EXCEPTION_HANDLER": "schedweb.api.exceptions.api_exception_handler",
    # JSON bodies only, nested at most MAX_JSON_DEPTH deep (schedweb.api.parsers; the limit is
    # below); no form or multipart: any other Content-Type is a 415. YAML where a view says so.
    "DEFAULT_PARSER_CLASSES": ["schedweb.api.parsers.BoundedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # Per-client request rates (default cache: shared through Redis when REDIS_URL is set).
    # The user rate is high because node agents report through few tokens.
    "DEFAULT_THROTTLE_CLASSES": ["schedweb.api.throttling.AnonRateThrottle",
                                 "schedweb.api.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {"anon": os.environ.get("API_THROTTLE_ANON", "120/minute"),
                               "user": os.environ.get("API_THROTTLE_USER", "20000/minute"),
                               # refused API tokens per client address (schedweb.api.authentication)
                               "bad_token": os.environ.get("API_THROTTLE_BAD_TOKEN", "30/minute")},
}
# Request limits (README "Input limits"): bounded work per request. Tasks per job, jobs per
# manifest, JSON nesting depth, and the YAML budget (nesting depth and nodes after expanding
# aliases, so an alias bomb is refused while it is read). Shapes and text: scheduler_core.shapes.
MAX_TASKS_PER_JOB = int(os.environ.get("MAX_TASKS_PER_JOB", "10000"))
MAX_JOBS_PER_MANIFEST = int(os.environ.get("MAX_JOBS_PER_MANIFEST", "500"))
# Tasks one request makes over all its jobs (a batch, a manifest), and one dry run; dry runs and
# previews a user runs at once (schedweb.api.limits). Waiting (Pending, Inqueue) jobs per
# submitter and per queue before a submission is a 429 (schedweb.core.job_submission; 0 = none).
MAX_TASKS_PER_REQUEST = int(os.environ.get("MAX_TASKS_PER_REQUEST", "10000"))
MAX_TASKS_PER_DRY_RUN = int(os.environ.get("MAX_TASKS_PER_DRY_RUN", "2000"))
MAX_CONCURRENT_DRY_RUNS = int(os.environ.get("MAX_CONCURRENT_DRY_RUNS", "2"))
MAX_PENDING_JOBS_PER_USER = int(os.environ.get("MAX_PENDING_JOBS_PER_USER", "1000"))
MAX_PENDING_JOBS_PER_QUEUE = int(os.environ.get("MAX_PENDING_JOBS_PER_QUEUE", "3000"))
MAX_JSON_DEPTH = int(os.environ.get("MAX_JSON_DEPTH", "64"))
MAX_YAML_DEPTH = int(os.environ.get("MAX_YAML_DEPTH", "64"))
MAX_YAML_NODES = int(os.environ.get("MAX_YAML_NODES", "1000000"))

SPECTACULAR_SETTINGS = {
    "TITLE": "schedweb API",
    "DESCRIPTION": "Queues, nodes, jobs (PodGroups) and the scheduler configuration.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "schedweb.api.schema_links.add_links",
                             "schedweb.api.schema_strict.strict_bodies",
                             "schedweb.api.schema_tags.describe_operations",
                             "schedweb.api.schema_errors.declare_errors",
                             "schedweb.api.schema_nullable.nullable_refs"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}
