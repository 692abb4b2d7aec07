"""ClinReview settings: one file, driven by the environment.

Development defaults are safe to run on one machine (SQLite, local media, a Celery broker on the
file system); production sets DATABASE_URL, CELERY_BROKER_URL, SECRET_KEY, ALLOWED_HOSTS, DEBUG=0.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    """A setting from the environment, or from the file named by NAME_FILE (Docker secrets)."""
    file_name = os.environ.get(f"{name}_FILE")
    if file_name:
        return Path(file_name).read_text().strip()
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]


# Off unless the environment says DEBUG=1: a deployment that forgets it must not show debug pages.
DEBUG = env_bool("DEBUG", False)
# The mode the environment chose; test runners switch DEBUG off while they run, this stays.
DEVELOPMENT = DEBUG
# The development key only works with DEBUG on; production must set SECRET_KEY. Left empty here,
# commands that sign nothing (makemigrations, check) still run; the web server and the worker refuse
# to start (clinreview/startup.py), and Django refuses any use of an empty key.
SECRET_KEY = env_str("SECRET_KEY") or ("dev-only-insecure-key" if DEBUG else "")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var")))
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media/"
RELEASES_ROOT = Path(env_str("RELEASES_ROOT", str(VAR_DIR / "releases")))
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
if DEBUG:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns when it is missing

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
    "knox",
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "annotations",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before WhiteNoise: the policy is on every response, static files included.
    "annotations.security_headers.SecurityHeadersMiddleware",
    "annotations.middleware.UndecodableInputMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "annotations.security_headers.SessionLifetimeMiddleware",
    "annotations.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last: a locked-out login (django-axes) is answered here, after the view recorded it.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "clinreview.urls"
WSGI_APPLICATION = "clinreview.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotations.access.roles_context",
            ],
        },
    }
]

# SQLite by default: WAL and IMMEDIATE transactions so that a web process and a Celery worker can
# write the same file without "database is locked" errors.
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'clinreview.sqlite3'}")
# Persistent connections (checked before reuse): a new PostgreSQL connection per request costs
# more than the queue query itself.
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("CONN_MAX_AGE", 60),
        conn_health_checks=env_bool("CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes counts failed logins (web form and POST /api/token/) in the database, so every web
# process sees the same count (annotations.login_throttle, docs/security.md): locked per (user name,
# client address) pair at LOGIN_FAILURE_LIMIT, per address at LOGIN_ADDRESS_FAILURE_LIMIT
# failures for existing names; unknown names lock nobody out. The client address is REMOTE_ADDR
# unless TRUSTED_PROXY_COUNT reverse proxies are declared (they append to TRUSTED_PROXY_HEADER).
AUTHENTICATION_BACKENDS = [
    "annotations.auth.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "annotations.login_throttle.LoginThrottleHandler"
AXES_CLIENT_IP_CALLABLE = "annotations.login_throttle.client_address"
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 5 * AXES_FAILURE_LIMIT)
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
TRUSTED_PROXY_HEADER = env_str("TRUSTED_PROXY_HEADER", "HTTP_X_FORWARDED_FOR")
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "annotations.views.accounts.locked_out"
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("zh-hans", _("Simplified Chinese"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG and env_bool("MANIFEST_STATIC", True)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Uploads: a benchmark TSV with base64 images can be large, but never unbounded. The first
# handler stops reading a request as soon as its file passes MAX_UPLOAD_BYTES.
MAX_UPLOAD_BYTES = env_int("MAX_UPLOAD_BYTES", 2 * 1024**3)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "annotations.uploads.LimitedUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Imports refuse, before decoding, a cell (or image file) over this size and an image that
# decodes to more pixels than this (a 257 KB PNG can claim 9400x9400).
IMPORT_MAX_CELL_BYTES = env_int("IMPORT_MAX_CELL_BYTES", 64 * 1024**2)
IMPORT_MAX_IMAGE_PIXELS = env_int("IMPORT_MAX_IMAGE_PIXELS", 50_000_000)

# Pseudonyms for de-identified DICOM stay stable across imports with the same secret. It is not
# SECRET_KEY (rotating that must not change every pseudonym); production must set its own, which
# the DICOM import enforces (so `check --deploy` passes on a web server that imports none).
DEID_SECRET = env_str("DEID_SECRET") or ("dev-only-deid-secret" if DEBUG else "")

# Model endpoints: a key comes from an environment variable with this prefix (never any server
# setting), or is stored encrypted with ENDPOINT_KEY_ENCRYPTION_KEY (a Fernet key).
ENDPOINT_KEY_ENV_PREFIX = env_str("ENDPOINT_KEY_ENV_PREFIX", "CLINREVIEW_KEY_")
ENDPOINT_KEY_ENCRYPTION_KEY = env_str("ENDPOINT_KEY_ENCRYPTION_KEY")
# Host names a model endpoint may be on; ".example.org" allows its subdomains, "*" any host.
# Restricted by default: none in production until the deployment names its model servers (a
# worker must not be pointed at internal services); any in development.
ENDPOINT_ALLOWED_HOSTS = env_list("ENDPOINT_ALLOWED_HOSTS", "*" if DEBUG else "")

# Cliff effects on degraded/clean twins (services.runs.calibration, written with every run's
# cliffs): a severe step dropping at least CLIFF_RATIO times the mild step, by at least
# CLIFF_MIN_DROP, with McNemar's exact p < CLIFF_ALPHA; type x modality rows need CLIFF_MIN_TWINS.
CLIFF_RULE = {
    "ratio": float(env_str("CLIFF_RATIO", "2.0")),
    "min_drop": float(env_str("CLIFF_MIN_DROP", "0.10")),
    "alpha": float(env_str("CLIFF_ALPHA", "0.05")),
    "min_twins": env_int("CLIFF_MIN_TWINS", 20),
}

# Debug pages and error reports mask every setting and request variable holding a credential.
DEFAULT_EXCEPTION_REPORTER_FILTER = "clinreview.debug.CredentialsHidingFilter"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "knox.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "annotations.api.schema.ClinReviewAutoSchema",
    "EXCEPTION_HANDLER": "annotations.api.errors.exception_handler",
    "DEFAULT_PAGINATION_CLASS": "annotations.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
}
# API tokens (POST /api/token/): stored as digests, expire, revoked at logout.
REST_KNOX = {
    "TOKEN_TTL": timedelta(hours=env_int("API_TOKEN_HOURS", 24)),
    "AUTH_HEADER_PREFIX": "Token",
    "TOKEN_LIMIT_PER_USER": 20,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ClinReview API",
    "DESCRIPTION": "Clinical curation of medical vision-language benchmarks.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI and Redoc from our own static files (drf-spectacular-sidecar), never a CDN:
    # /api/docs/ must work on a hospital network without internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: a broker that needs no server by default (kombu's file-system transport).
# "localhost": the transport ignores it, and kombu warns on every connection without a host.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")
CELERY_BROKER_DIR = Path(env_str("CELERY_BROKER_DIR", str(VAR_DIR / "celery-broker")))
if CELERY_BROKER_URL.startswith("filesystem"):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_BROKER_DIR / "queue"),
        "data_folder_out": str(CELERY_BROKER_DIR / "queue"),
        "processed_folder": str(CELERY_BROKER_DIR / "processed"),
        "store_processed": False,
        # An idle worker looks in the folder this often (kombu's default is 1 s): a run's chunks
        # are tasks of a second or two each, and each would wait half a second for its message.
        "polling_interval": 0.1,
        # kombu's default is ./control, in whatever folder the process was started from.
        "control_folder": str(CELERY_BROKER_DIR / "control"),
    }
else:
    # Redis redelivers an unacknowledged task (a killed worker's) after this many seconds. A
    # redelivered task whose row is still claimed and beating finds it taken and stops, so this
    # may be shorter than the longest task; the reaper usually requeues a dead worker's work first.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 600)
    }
for _folder in (
    ("queue", "processed", "control") if CELERY_BROKER_URL.startswith("filesystem") else ()
):
    # The file-system transport expects its folders to exist before the first message.
    (CELERY_BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True  # a killed worker's task is redelivered; tasks are idempotent.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 3600)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 3900)
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "clinreview")

# Crash-safe background work (annotations.services.recovery): a working task beats its row every
# JOB_HEARTBEAT_SECONDS; the reaper, run by Celery beat every JOB_REAP_SECONDS and by each worker
# at start, requeues running work whose heartbeat is older than JOB_STALE_SECONDS and resends the
# task of work queued longer than JOB_RESEND_SECONDS.
JOB_HEARTBEAT_SECONDS = env_int("JOB_HEARTBEAT_SECONDS", 10)
JOB_STALE_SECONDS = env_int("JOB_STALE_SECONDS", 60)
JOB_RESEND_SECONDS = env_int("JOB_RESEND_SECONDS", 300)
JOB_REAP_SECONDS = env_int("JOB_REAP_SECONDS", 30)
# Degradation and triage jobs are split into chunks that any worker takes: about this many twins,
# or images to hash, per chunk.
JOB_DEGRADE_CHUNK = env_int("JOB_DEGRADE_CHUNK", 200)
JOB_TRIAGE_CHUNK = env_int("JOB_TRIAGE_CHUNK", 2000)
# No patient file outlives its job (annotations.services.media_sweep): every MEDIA_SWEEP_SECONDS
# (and at each worker's start) the raw files of ended imports are removed; a failed import's
# upload, kept for a retry, and anything no job names expire after UPLOAD_EXPIRY_HOURS.
MEDIA_SWEEP_SECONDS = env_int("MEDIA_SWEEP_SECONDS", 300)
UPLOAD_EXPIRY_HOURS = env_int("UPLOAD_EXPIRY_HOURS", 24)
CELERY_BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "annotations.reap_stale_jobs", "schedule": JOB_REAP_SECONDS},
    "sweep-media": {"task": "annotations.sweep_media", "schedule": MEDIA_SWEEP_SECONDS},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# Production hardening: on whenever DEBUG is off.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
# Only behind a proxy that sets it (and strips it from clients): "HTTP_X_FORWARDED_PROTO,https".
_proxy_header = env_list("SECURE_PROXY_SSL_HEADER", "")
if len(_proxy_header) == 2:
    SECURE_PROXY_SSL_HEADER = tuple(_proxy_header)
elif _proxy_header:
    raise RuntimeError(
        "SECURE_PROXY_SSL_HEADER must be 'HEADER,value', e.g. HTTP_X_FORWARDED_PROTO,https"
    )
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# Clinical defaults (annotations.security_headers, docs/security.md): a session ends 12 hours
# after the login, or after 30 minutes without a request.
SESSION_MAX_HOURS = env_int("SESSION_MAX_HOURS", 12)
SESSION_IDLE_MINUTES = env_int("SESSION_IDLE_MINUTES", 30)
SESSION_COOKIE_AGE = SESSION_MAX_HOURS * 3600
# On every response (annotations.security_headers): no inline script, nothing from elsewhere.
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "style-src-elem 'self'; img-src 'self' data: blob:; font-src 'self' data:; "
    "connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'",
)

LOG_LEVEL = env_str("LOG_LEVEL", "WARNING")
# One handler, on the root: Django's own "django" logger would print every record a second time
# under DEBUG. Its request logger drops the traceback of refused (4xx) requests.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"client_error": {"()": "clinreview.log_filters.ClientErrorWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django": {"handlers": [], "level": LOG_LEVEL, "propagate": True},
        "django.request": {"filters": ["client_error"]},
    },
}
