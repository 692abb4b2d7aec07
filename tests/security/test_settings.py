"""Safe defaults: DEBUG off unless asked, credentials masked in debug output, check --deploy
clean with only SECRET_KEY and ALLOWED_HOSTS, DEID_SECRET required where DICOM is de-identified."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import RequestFactory, override_settings
from django.views.debug import technical_500_response

from annotations.services.cases import deid_secret
from annotations.services.errors import DomainError
from clinreview.debug import CredentialsHidingFilter

ROOT = Path(__file__).resolve().parents[2]
# Made at run time: the debug page also shows source lines, which must not hold them.
DB_PASSWORD, BROKER_PASSWORD, FERNET_SECRET = (secrets.token_hex(8) for _ in range(3))


def _production_env(**extra: str) -> dict[str, str]:
    """Only what a deployment must set (and where this test run keeps its files)."""
    return {
        "PATH": os.environ["PATH"],
        "VAR_DIR": os.environ["VAR_DIR"],
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "clinreview.example.org",
        **extra,
    }


def _setting(expression: str, env: dict[str, str]) -> str:
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "clinreview.settings"},
        capture_output=True,
        text=True,
        check=False,
    )
    return (result.stdout + result.stderr).strip()


def test_debug_is_off_unless_the_environment_says_debug_1():
    assert _setting("settings.DEBUG", _production_env()) == "False"
    assert _setting("settings.DEBUG", _production_env(DEBUG="1")) == "True"


def _without_a_key() -> dict[str, str]:
    return {k: v for k, v in _production_env().items() if k != "SECRET_KEY"}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "clinreview.settings"},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_commands_that_sign_nothing_run_without_a_secret_key():
    # A checkout with neither DEBUG nor a key can still check its migrations.
    result = _run(
        [sys.executable, "manage.py", "makemigrations", "--check", "--dry-run"], _without_a_key()
    )
    assert result.returncode == 0, result.stderr
    assert "No changes detected" in result.stdout
    # Yet nothing falls back to the development key: Django refuses the empty one on use.
    assert "SECRET_KEY setting must not be empty" in _setting(
        "settings.SECRET_KEY", _without_a_key()
    )


def test_the_web_server_refuses_to_start_without_a_secret_key():
    code = "import clinreview.wsgi"
    refused = _run([sys.executable, "-c", code], _without_a_key())
    assert refused.returncode != 0
    assert "SECRET_KEY must be set" in refused.stderr
    assert _run([sys.executable, "-c", code], _production_env()).returncode == 0
    asgi = _run([sys.executable, "-c", "import clinreview.asgi"], _without_a_key())
    assert "SECRET_KEY must be set" in asgi.stderr


def test_the_worker_refuses_to_start_without_a_secret_key():
    worker = [sys.executable, "-m", "celery", "-A", "clinreview", "worker", "--pool=solo"]
    refused = _run(worker, _without_a_key())
    assert refused.returncode != 0
    assert "ClinReview worker not started: SECRET_KEY must be set" in refused.stderr
    # With a key the same start-up signal passes (a real worker would then run until stopped).
    code = (
        "from clinreview.celery import app; from celery.signals import worker_init;"
        " worker_init.send(sender=None)"
    )
    started = _run([sys.executable, "-c", code], _production_env())
    assert started.returncode == 0 and "not started" not in started.stderr


def test_the_proxy_ssl_header_is_trusted_only_when_configured():
    assert _setting("settings.SECURE_PROXY_SSL_HEADER", _production_env()) == "None"
    configured = _production_env(SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https")
    assert _setting("settings.SECURE_PROXY_SSL_HEADER", configured) == (
        "('HTTP_X_FORWARDED_PROTO', 'https')"
    )


def test_the_deid_secret_is_not_the_secret_key():
    assert _setting("repr(settings.DEID_SECRET)", _production_env()) == "''"
    env = _production_env(DEID_SECRET="pseudonym-key")
    assert _setting("settings.DEID_SECRET", env) == "pseudonym-key"


def test_check_deploy_passes_with_only_a_secret_key_and_allowed_hosts():
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.django_db
def test_a_dicom_import_without_deid_secret_is_refused_with_a_clear_message(settings):
    settings.DEID_SECRET = ""
    with pytest.raises(DomainError, match="DEID_SECRET is not set"):
        deid_secret()


def test_a_debug_500_page_masks_every_credential():
    database_url = f"postgres://clin:{DB_PASSWORD}@db.internal:5432/clinreview"
    broker_url = f"redis://:{BROKER_PASSWORD}@redis.internal:6379/0"
    databases = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:",
                             "PASSWORD": DB_PASSWORD}}  # fmt: skip
    request = RequestFactory().get(
        "/boom/", DATABASE_URL=database_url, CELERY_BROKER_URL=broker_url
    )
    with override_settings(
        DEBUG=True,
        DATABASE_URL=database_url,
        CELERY_BROKER_URL=broker_url,
        EXTRA_CONNECTION=f"amqp://user:{BROKER_PASSWORD}@mq.internal//",
        ENDPOINT_KEY_ENCRYPTION_KEY=FERNET_SECRET,
    ):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            response = technical_500_response(request, *sys.exc_info())
        html = response.content.decode()
        assert "boom" in html and "DATABASE_URL" in html and "CELERY_BROKER_URL" in html
        for secret in (DB_PASSWORD, BROKER_PASSWORD, FERNET_SECRET):
            assert secret not in html
    # DATABASES as dj-database-url fills it: its PASSWORD is masked wherever it is shown.
    cleansed = CredentialsHidingFilter().cleanse_setting("DATABASES", databases)
    assert cleansed["default"]["PASSWORD"] != DB_PASSWORD
    assert cleansed["default"]["NAME"] == ":memory:"
