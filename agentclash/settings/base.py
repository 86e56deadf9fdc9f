"""Settings shared by every environment. One django-environ ``env`` reads them all."""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from artifacts.storage import storage_config as artifact_storage_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env(
    DEBUG=(bool, False),
    ALLOWED_HOSTS=(list, ["localhost", "127.0.0.1", "[::1]", "testserver"]),
    CSRF_TRUSTED_ORIGINS=(list, []),
    ALLOW_PRIVATE_PROVIDER_URLS=(bool, False),
    SANDBOX_ALLOW_UNISOLATED=(bool, False),
    REQUIRE_SERVICES=(bool, False),
)
env_file = BASE_DIR / ".env"
if env_file.exists():
    environ.Env.read_env(str(env_file))

VAR_DIR = Path(env.str("AGENTCLASH_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env("DEBUG")
SECRET_KEY = env("DJANGO_SECRET_KEY", default="")
ALLOWED_HOSTS = env("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "axes",
    "csp",
    "core",
    "workspaces",
    "secrets_app",
    "infrastructure",
    "artifacts",
    "packs",
    "runs",
    "scoring",
    "regression",
    "comparisons",
]

MIDDLEWARE = [
    # First: every answer, the other middleware's included, carries X-Request-Id (core/request_id.py).
    "core.request_id.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, so it sees a login's lockout flag after the view ran (django-axes' documented place).
    "axes.middleware.AxesMiddleware",
    "core.middleware.ApiErrorMiddleware",
]

ROOT_URLCONF = "agentclash.urls"

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
                "workspaces.context_processors.navigation",
            ],
        },
    },
]

WSGI_APPLICATION = "agentclash.wsgi.application"

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'agentclash.sqlite3'}"),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL + a busy timeout let the web server and the Celery worker share the file.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            # Take the write lock at BEGIN: a read transaction cannot be upgraded while the
            # worker and the web server write, which SQLite reports as "database is locked".
            "transaction_mode": "IMMEDIATE",
        }
    )
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"].startswith("django.db.backends.postgresql"):
    # Server-side prepared statements for the worker's hot statements (runs/adapters/statements.py
    # prepared_cursor; docs/performance.md): psycopg prepares a statement once it ran this many
    # times on a connection. "off" for PgBouncer in transaction mode before 1.21 (or without
    # max_prepared_statements). A prepare_threshold in DATABASE_URL wins.
    _prepare = env.str("DATABASE_PREPARE_THRESHOLD", default="5").strip().lower()
    if _prepare != "off":
        if not _prepare.isdigit():
            raise ImproperlyConfigured('DATABASE_PREPARE_THRESHOLD must be a whole number (0 = prepare at once) or "off".')
        DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", int(_prepare))

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns about a missing root
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
# Artifacts (docs/artifacts.md): local files under MEDIA_ROOT/artifacts, or S3-compatible object
# storage through django-storages when ARTIFACT_STORAGE_URL is s3://BUCKET[/PREFIX][?endpoint_url=…].
ARTIFACT_STORAGE_URL = env.str("ARTIFACT_STORAGE_URL", default="")
ARTIFACT_MAX_BYTES = env.int("ARTIFACT_MAX_BYTES", default=50 * 1024 * 1024)
# All of a workspace's artifacts together (uploads, published bundles, run exports): 413 quota_exceeded past it.
ARTIFACT_BYTES_PER_WORKSPACE = env.int("ARTIFACT_BYTES_PER_WORKSPACE", default=5 * 1024 * 1024 * 1024)
# The artifacts attached to one run (its stored exports, which every export call adds afresh).
ARTIFACT_BYTES_PER_RUN = env.int("ARTIFACT_BYTES_PER_RUN", default=1024 * 1024 * 1024)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "artifacts": artifact_storage_config(ARTIFACT_STORAGE_URL, local_root=MEDIA_ROOT / "artifacts"),
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the <body> hx-headers, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# --- Abuse limits (docs/operations.md "Security settings") -----------------------------------
# Proxies in front of the app that append to X-Forwarded-For; 0 trusts REMOTE_ADDR only. Used for
# login lockout and API throttling, so it must match the deployment or clients share one bucket.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
# Throttle counters live in the cache: set CACHE_URL (redis://…) when several web processes serve.
CACHES = {"default": env.cache("CACHE_URL", default="locmemcache://")}
# How long an Idempotency-Key's first answer is replayed (workspaces/idempotency.py).
IDEMPOTENCY_KEY_TTL_HOURS = env.int("IDEMPOTENCY_KEY_TTL_HOURS", default=24)
# JSON request bodies nested deeper than this are refused with a 400 (core/parsers.py).
API_JSON_MAX_DEPTH = env.int("API_JSON_MAX_DEPTH", default=64)

# django-axes: lock a username from one address after repeated failed logins (both login pages).
AUTHENTICATION_BACKENDS = [
    "core.auth.LoginLockoutBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = env.bool("AXES_ENABLED", default=True)
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("LOGIN_LOCKOUT_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "core.auth.lockout_response"
AXES_HTTP_RESPONSE_CODE = 429
AXES_CLIENT_IP_CALLABLE = "core.net.client_ip"
AXES_VERBOSE = False

# --- Content-Security-Policy (django-csp): no inline script or style anywhere (docs/style.md §16) --
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

# --- REST framework -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "workspaces.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # TokenLimits: what an API token's workspace and scope allow (docs/operations.md "API tokens").
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated", "workspaces.permissions.TokenLimits"],
    "DEFAULT_PAGINATION_CLASS": "core.api.Pagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
    # core.throttling reads these at request time (DRF's own classes bind them at import).
    "DEFAULT_THROTTLE_CLASSES": ["core.throttling.AnonRateThrottle", "core.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env.str("API_THROTTLE_ANON", default="60/min"),
        "user": env.str("API_THROTTLE_USER", default="1200/min"),
        # Failed bearer-token authentications per client address; past it every token is refused.
        "token_auth_failure": env.str("API_THROTTLE_TOKEN_FAILURES", default="20/min"),
    },
    "DEFAULT_SCHEMA_CLASS": "core.schema.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "AgentClash API",
    "DESCRIPTION": "Challenge packs, runs, scorecards and release gates. Bearer tokens: `Authorization: Bearer act_…`.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {},
    # The Error component on every operation's error answers (core/schema.py), then the hosted
    # callback, a plain Django view drf-spectacular cannot see (runs/hosted/schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.schema.document_error_responses",
        "runs.hosted.schema.document_hosted_callback",
    ],
    # Group the API docs by what an endpoint is about (runs, packs, secrets…), not all under "v1".
    "SCHEMA_PATH_PREFIX": r"/api/v1(?:/workspaces/\{[^/]+\})?",
}

# --- Celery -------------------------------------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="filesystem://")
CELERY_BROKER_FOLDER = VAR_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_FOLDER / "queue"),
        "data_folder_out": str(CELERY_BROKER_FOLDER / "queue"),
        "processed_folder": str(CELERY_BROKER_FOLDER / "processed"),
        "control_folder": str(CELERY_BROKER_FOLDER / "control"),
        # The filesystem transport polls its folder: each pool process waits up to one interval
        # for its next case, so a run is capped at about concurrency / interval cases/s (0.1 s
        # held 4 processes to ~37/s). Idle cost and figures: docs/performance.md.
        "polling_interval": env.float("CELERY_BROKER_POLLING_INTERVAL", default=0.02),
        "store_processed": False,
    }
    # Kombu's filesystem transport does not create its folders; the web process and the worker both need them.
    for _folder in ("queue", "processed", "control"):
        (CELERY_BROKER_FOLDER / _folder).mkdir(parents=True, exist_ok=True)
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=None)
# Provider account limits shared by every worker (docs/provider-limits.md): counted in this Redis
# (by default the broker's, when it is Redis), else in the database. Empty = the database.
PROVIDER_LIMITS_REDIS_URL = env.str(
    "PROVIDER_LIMITS_REDIS_URL", default=CELERY_BROKER_URL if CELERY_BROKER_URL.startswith(("redis://", "rediss://")) else ""
)
# An LLM judge call's time budget: waiting for a slot of its account's limits plus the call itself.
JUDGE_CALL_SECONDS = env.float("JUDGE_CALL_SECONDS", default=60.0)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=30 * 60)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=25 * 60)
# Messages each pool process reserves ahead. Push brokers deliver the next one at once: 1. The
# polling filesystem broker makes a process that finished a case wait for the main process's
# next poll: 4 there (a reserved message lost with its worker is re-dispatched by the reaper,
# "lost" cases; figures: docs/performance.md). 0 would mean unlimited in Celery: refused.
CELERY_WORKER_PREFETCH_MULTIPLIER = env.int(
    "CELERY_WORKER_PREFETCH_MULTIPLIER", default=4 if CELERY_BROKER_URL.startswith("filesystem://") else 1
)
if CELERY_WORKER_PREFETCH_MULTIPLIER < 1:
    raise ImproperlyConfigured("CELERY_WORKER_PREFETCH_MULTIPLIER must be 1 or more.")
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fix-up closes every database connection before and after each task unless this
# is set; reconnecting (a new PostgreSQL backend with cold catalog caches) then dominates short
# tasks. Connections are reused for this many tasks; runs tasks also drop a connection that is
# broken or older than CONN_MAX_AGE before they start (runs/tasks.py).
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=1000)
# A safety net against a leak: a pool process whose peak RSS passed this many KiB is replaced
# once its current task is done (nothing is cut short). Far above what one uses: about 130 MB at
# the peak of a 5,000-case run (docs/performance.md "Memory at 5,000 cases"). 0 = never.
CELERY_WORKER_MAX_MEMORY_PER_CHILD = env.int("CELERY_WORKER_MAX_MEMORY_PER_CHILD", default=512 * 1024)
if CELERY_WORKER_MAX_MEMORY_PER_CHILD < 0:
    raise ImproperlyConfigured("CELERY_WORKER_MAX_MEMORY_PER_CHILD must be 0 (never) or more.")
# A pool process that finishes a case runs the lane's next case itself, up to this many cases
# (and 0.5 s) per task, instead of sending it through the broker (runs/tasks.py); 1 = never.
RUNS_CASE_CHAIN = env.int("RUNS_CASE_CHAIN", default=16)
if RUNS_CASE_CHAIN < 1:
    raise ImproperlyConfigured("RUNS_CASE_CHAIN must be 1 (no chaining) or more.")
# Fair scheduling (docs/operations.md "Fair scheduling"): a lane never has more than
# RUNS_MAX_IN_FLIGHT_CEILING cases dispatched and unfinished, whatever its runtime profile's
# max_in_flight_cases says; a workspace never more than RUNS_WORKSPACE_MAX_IN_FLIGHT across all its
# running runs (0 = no workspace cap), shared among its lanes least-served first; and a case is
# published at a broker priority that falls as its workspace's in-flight count grows, so a
# workspace that starts its first case goes ahead of one that already has many waiting.
RUNS_MAX_IN_FLIGHT_CEILING = env.int("RUNS_MAX_IN_FLIGHT_CEILING", default=64)
if RUNS_MAX_IN_FLIGHT_CEILING < 1:
    raise ImproperlyConfigured("RUNS_MAX_IN_FLIGHT_CEILING must be 1 or more.")
RUNS_WORKSPACE_MAX_IN_FLIGHT = env.int("RUNS_WORKSPACE_MAX_IN_FLIGHT", default=32)
if RUNS_WORKSPACE_MAX_IN_FLIGHT < 0:
    raise ImproperlyConfigured("RUNS_WORKSPACE_MAX_IN_FLIGHT must be 0 (no cap) or more.")
# Nothing lost (docs/operations.md "Nothing lost, nothing stuck"): every RUNS_REDISPATCH_EVERY_SECONDS
# beat sends again the start of a run still queued, and the message of a case dispatched but not
# claimed, RUNS_REDISPATCH_AFTER_SECONDS after the last send (a message lost with a broker restart,
# or never published: the web process died between its commit and the publish). A message that
# was not lost makes its copy a no-op (every claim is a compare-and-set).
RUNS_REDISPATCH_AFTER_SECONDS = env.float("RUNS_REDISPATCH_AFTER_SECONDS", default=15.0)
RUNS_REDISPATCH_EVERY_SECONDS = env.float("RUNS_REDISPATCH_EVERY_SECONDS", default=5.0)
if RUNS_REDISPATCH_AFTER_SECONDS <= 0 or RUNS_REDISPATCH_EVERY_SECONDS <= 0:
    raise ImproperlyConfigured("RUNS_REDISPATCH_AFTER_SECONDS and RUNS_REDISPATCH_EVERY_SECONDS must be positive.")
CELERY_BEAT_SCHEDULE: dict = {
    # Fails runs stuck in queued/provisioning for 15 min and re-queues cases whose worker died.
    "runs-reaper": {"task": "runs.run_reap", "schedule": 60.0},
    "runs-redispatch": {"task": "runs.run_redispatch", "schedule": RUNS_REDISPATCH_EVERY_SECONDS},
}

# --- AgentClash ---------------------------------------------------------------------------
SECRETS_ENCRYPTION_KEYS = env.list("SECRETS_ENCRYPTION_KEY", default=[])
ALLOW_PRIVATE_PROVIDER_URLS = env("ALLOW_PRIVATE_PROVIDER_URLS")
SANDBOX_ALLOW_UNISOLATED = env("SANDBOX_ALLOW_UNISOLATED")
SANDBOX_ROOT = Path(env.str("SANDBOX_ROOT", default=str(VAR_DIR / "sandboxes")))
# Pre-started one-use sandboxes kept per worker process (docs/engine-safety.md "Warm sandboxes
# and the persistent channel"); 0 = every sandbox starts cold. 1 is enough for one case at a time:
# a case's first command then costs one round trip (~1.5 ms) instead of a sandbox start (~7 ms).
SANDBOX_WARM_POOL = env.int("SANDBOX_WARM_POOL", default=1)
if SANDBOX_WARM_POOL < 0:
    raise ImproperlyConfigured("SANDBOX_WARM_POOL must be 0 or more.")
# The sandbox's PID 1 (docs/engine-safety.md "The native launcher"): always the native launcher
# (engine/sandbox/launcher.c, built into SANDBOX_LAUNCHER_DIR by `make setup`, which fails without
# a C compiler, or on first use); a sandbox does not start without it. "auto" is its old name; the
# Python PID 1 ("python") was removed, and is refused here in every environment.
SANDBOX_LAUNCHER = env.str("SANDBOX_LAUNCHER", default="native").strip().lower()
if SANDBOX_LAUNCHER == "auto":
    SANDBOX_LAUNCHER = "native"
if SANDBOX_LAUNCHER != "native":
    raise ImproperlyConfigured(
        'SANDBOX_LAUNCHER must be "native": the sandbox\'s PID 1 is always the native launcher (the Python one was removed).'
    )
SANDBOX_LAUNCHER_DIR = env.str("SANDBOX_LAUNCHER_DIR", default=str(VAR_DIR / "launcher"))
if not SANDBOX_LAUNCHER_DIR.strip():
    raise ImproperlyConfigured("SANDBOX_LAUNCHER_DIR must name the native launcher's directory (default var/launcher).")
# Sandbox egress (docs/engine-safety.md "Network"): "allowlist" = packs that ask get the filtering
# proxy; "off" = no agent network at all, whatever packs ask. SANDBOX_PRIVATE_ALLOWLIST: CIDRs of
# loopback/private/link-local/CGNAT ranges that packs may reach when they allowlist them too.
SANDBOX_NETWORK = env.str("SANDBOX_NETWORK", default="allowlist").strip().lower()
SANDBOX_PRIVATE_ALLOWLIST = [c.strip() for c in env.list("SANDBOX_PRIVATE_ALLOWLIST", default=[]) if c.strip()]
if SANDBOX_NETWORK not in ("allowlist", "off"):
    raise ImproperlyConfigured('SANDBOX_NETWORK must be "allowlist" or "off".')
for _cidr in SANDBOX_PRIVATE_ALLOWLIST:
    try:
        ipaddress.ip_network(_cidr, strict=False)
    except ValueError:
        raise ImproperlyConfigured(f"SANDBOX_PRIVATE_ALLOWLIST: {_cidr!r} is not a CIDR.") from None
# Sandbox packages (docs/operations.md "Sandbox packages"): sandbox.additional_packages and sandbox
# templates' packages, fetched with apt-get download into read-only layers under this cache, once per
# (package set, architecture). ALLOW empty = any package apt knows; DENY always wins.
SANDBOX_PACKAGES_ENABLED = env.bool("SANDBOX_PACKAGES_ENABLED", default=True)
SANDBOX_PACKAGES_CACHE_DIR = env.str("SANDBOX_PACKAGES_CACHE_DIR", default=str(VAR_DIR / "sandbox-packages"))
SANDBOX_PACKAGES_ALLOW = [p.strip().lower() for p in env.list("SANDBOX_PACKAGES_ALLOW", default=[]) if p.strip()]
SANDBOX_PACKAGES_DENY = [p.strip().lower() for p in env.list("SANDBOX_PACKAGES_DENY", default=[]) if p.strip()]
SANDBOX_PACKAGES_MAX_LAYER_BYTES = env.int("SANDBOX_PACKAGES_MAX_LAYER_BYTES", default=512 * 1024 * 1024)
SANDBOX_PACKAGES_MAX_CACHE_BYTES = env.int("SANDBOX_PACKAGES_MAX_CACHE_BYTES", default=4 * 1024 * 1024 * 1024)
if SANDBOX_PACKAGES_MAX_LAYER_BYTES < 1 or SANDBOX_PACKAGES_MAX_CACHE_BYTES < SANDBOX_PACKAGES_MAX_LAYER_BYTES:
    raise ImproperlyConfigured("SANDBOX_PACKAGES_MAX_LAYER_BYTES must be positive and at most SANDBOX_PACKAGES_MAX_CACHE_BYTES.")
RUN_EVENT_INLINE_MAX_BYTES = env.int("RUN_EVENT_INLINE_MAX_BYTES", default=32 * 1024)
# A case's worker flushes buffered events this often, and beats its heartbeat (which the reaper
# reads to find dead workers) this often; a failed attempt is retried after
# RUNS_RETRY_BACKOFF_SECONDS × 2^(attempt - 1).
RUNS_EVENT_FLUSH_SECONDS = env.float("RUNS_EVENT_FLUSH_SECONDS", default=0.5)
RUNS_HEARTBEAT_SECONDS = env.float("RUNS_HEARTBEAT_SECONDS", default=5.0)
RUNS_RETRY_BACKOFF_SECONDS = env.float("RUNS_RETRY_BACKOFF_SECONDS", default=10.0)
API_TOKEN_PREFIX = "act_"
# Hosted external agents (docs/hosted-agents.md): the public origin agents post their events back
# to (the callback URL sent with each case), and the bounds on the worker's case POST and on a
# callback body. No process waits for a hosted agent: its callback or its deadline finishes the case.
HOSTED_CALLBACK_BASE_URL = env.str("HOSTED_CALLBACK_BASE_URL", default="http://localhost:8000").rstrip("/")
HOSTED_DISPATCH_TIMEOUT_SECONDS = env.float("HOSTED_DISPATCH_TIMEOUT_SECONDS", default=10.0)
HOSTED_DISPATCH_MAX_RESPONSE_BYTES = env.int("HOSTED_DISPATCH_MAX_RESPONSE_BYTES", default=64 * 1024)
HOSTED_CALLBACK_MAX_BYTES = env.int("HOSTED_CALLBACK_MAX_BYTES", default=256 * 1024)
# Messages one case may post to the hosted callback per window (a 429 with Retry-After past it).
HOSTED_CALLBACK_THROTTLE = env.str("HOSTED_CALLBACK_THROTTLE", default="600/min")
# Byte budgets of what hosted agents post (docs/hosted-agents.md): one case attempt, one run, and
# one workspace's running runs together; over a budget the callback answers 429 naming it.
HOSTED_EVENT_BYTES_PER_CASE = env.int("HOSTED_EVENT_BYTES_PER_CASE", default=16 * 1024 * 1024)
HOSTED_EVENT_BYTES_PER_RUN = env.int("HOSTED_EVENT_BYTES_PER_RUN", default=256 * 1024 * 1024)
HOSTED_EVENT_BYTES_PER_WORKSPACE = env.int("HOSTED_EVENT_BYTES_PER_WORKSPACE", default=1024 * 1024 * 1024)
# Byte budgets of the events native (engine-driven) agents store (docs/operations.md, Quotas): one
# case attempt, one run, and one workspace's running runs together (hosted agents' bytes count in the
# run and workspace totals too); over a budget the case stops with stop reason quota_exceeded. 0: no limit.
EVENT_BYTES_PER_CASE = env.int("EVENT_BYTES_PER_CASE", default=64 * 1024 * 1024)
EVENT_BYTES_PER_RUN = env.int("EVENT_BYTES_PER_RUN", default=4 * 1024 * 1024 * 1024)
EVENT_BYTES_PER_WORKSPACE = env.int("EVENT_BYTES_PER_WORKSPACE", default=16 * 1024 * 1024 * 1024)
# Tests only: fail instead of skipping when PostgreSQL, Redis, bubblewrap or Chromium is missing.
REQUIRE_SERVICES = env("REQUIRE_SERVICES")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.request_id.RequestIdLogFilter"}},
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s [%(request_id)s] %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["request_id"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
