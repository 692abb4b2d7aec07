"""The reaper's tasks: Celery beat runs them (the reaper every JOB_REAP_SECONDS, the media sweep
every MEDIA_SWEEP_SECONDS), and each worker runs both once at start (see
`annotations.services.recovery` and `annotations.services.media_sweep`)."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready
from django.db import connection

from annotations.services.media_sweep import media_sweep
from annotations.services.recovery import reap_stale

log = logging.getLogger(__name__)


@shared_task(name="annotations.reap_stale_jobs", ignore_result=True)
def reap_stale_jobs() -> int:
    """Requeue work whose worker died; resend tasks whose message was lost. Idempotent."""
    return len(reap_stale())


@shared_task(name="annotations.sweep_media", ignore_result=True)
def sweep_media() -> int:
    """Remove the raw files of ended imports and the orphans under MEDIA_ROOT. Idempotent."""
    return len(media_sweep().removed)


@worker_ready.connect
def _reap_when_a_worker_starts(**_kwargs) -> None:
    # A restarted worker looks at once for work its predecessor left half done.
    try:
        reap_stale()
    except Exception:  # never keep a worker from starting
        log.exception("reaping stale jobs at worker start failed")
    try:
        # ... and for patient files a dead predecessor left on disk.
        media_sweep()
    except Exception:
        log.exception("sweeping MEDIA_ROOT at worker start failed")
    finally:
        connection.close()
