"""Degradation jobs: planned into chunks of twins that any worker makes (`tasks.jobs`)."""

from __future__ import annotations

from celery import shared_task

from annotations.services.degrade import DEGRADE_WORK
from annotations.services.jobs import job_recovery_kind, job_start
from annotations.services.recovery import register


@shared_task(name="annotations.benchmark_degrade")
def benchmark_degrade_task(job_id: int) -> None:
    """Plan a degradation job into chunks and send them, or finish it when they are all done.

    Idempotent: the job is claimed with its lease; the plan is stored once, and a job whose
    worker died is requeued by the reaper and goes on from its chunks.
    """
    job_start(job_id=job_id, work=DEGRADE_WORK)


register(job_recovery_kind("degrade", lambda pk: benchmark_degrade_task.delay(pk)))
