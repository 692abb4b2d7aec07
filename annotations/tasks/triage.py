"""Triage recomputation (queued by runs and imports when they finish, or by a curator): the
images to hash are chunks that any worker takes (`tasks.jobs`); the last one combines the
evidence."""

from __future__ import annotations

from celery import shared_task

from annotations.services.jobs import job_recovery_kind, job_start
from annotations.services.recovery import register
from annotations.services.triage import TRIAGE_WORK


@shared_task(name="annotations.triage_benchmark")
def triage_benchmark_task(job_id: int) -> None:
    """Recompute the triage of the job's benchmark. Idempotent: the job is claimed with its
    lease, image hashes are stored once, and a recomputation replaces the results whole."""
    job_start(job_id=job_id, work=TRIAGE_WORK)


register(job_recovery_kind("triage", lambda pk: triage_benchmark_task.delay(pk)))
