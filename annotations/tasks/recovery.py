"""The reaper's task: Celery beat runs it every REAP_SECONDS, and each worker runs it once at
start (see `annotations.services.recovery`)."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import connection

from annotations.services.recovery import reap_stale

log = logging.getLogger(__name__)


@shared_task(name="annotations.reap_stale_jobs", ignore_result=True)
def reap_stale_jobs() -> int:
    """Requeue work whose worker died; resend tasks whose message was lost. Idempotent."""
    return len(reap_stale())


@worker_ready.connect
def _reap_when_a_worker_starts(**_kwargs) -> None:
    # A restarted worker looks at once for work its predecessor left half done.
    try:
        reap_stale()
    except Exception:  # never keep a worker from starting
        log.exception("reaping stale jobs at worker start failed")
    finally:
        connection.close()
