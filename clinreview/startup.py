"""Refusals at the moment a server or worker starts, not at every import of the settings.

Management commands that never sign anything (makemigrations, check, collectstatic) must run
without a secret key; a web server or a Celery worker must not.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def require_secret_key() -> None:
    try:
        key = settings.SECRET_KEY
    except ImproperlyConfigured:  # Django's own refusal of an empty key, reworded for an operator
        key = ""
    if not key:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when DEBUG is off (or set it via SECRET_KEY_FILE)."
        )
