from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clinreview.settings")

app = Celery("clinreview")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def _refuse_to_start_without_a_secret_key(**_kwargs: object) -> None:
    # Here, not at import: manage.py imports this app too, and its commands need no key.
    from django.core.exceptions import ImproperlyConfigured

    from clinreview.startup import require_secret_key

    try:
        require_secret_key()
    except ImproperlyConfigured as refusal:
        # SystemExit, because Celery logs and swallows an ordinary exception from a signal handler.
        raise SystemExit(f"ClinReview worker not started: {refusal}") from None
