"""A chunk of a degradation, triage or Gastric-X import job, taken by any worker (see `services.jobs`)."""

from __future__ import annotations

from celery import shared_task

from annotations.services.degrade import DEGRADE_WORK
from annotations.services.gastricx_jobs import GASTRICX_IMPORT_WORK
from annotations.services.jobs import chunk_recovery_kind, chunk_run
from annotations.services.recovery import register
from annotations.services.triage import TRIAGE_WORK

WORKS = {work.kind: work for work in (DEGRADE_WORK, TRIAGE_WORK, GASTRICX_IMPORT_WORK)}


@shared_task(name="annotations.job_chunk")
def job_chunk_task(chunk_id: int) -> None:
    """Do one chunk of a job, resuming from what is stored; the last chunk finishes the job.
    Idempotent: the chunk is claimed with its lease, and a done chunk is left alone."""
    chunk_run(chunk_id=chunk_id, works=WORKS)


register(chunk_recovery_kind(lambda pk: job_chunk_task.delay(pk)))
