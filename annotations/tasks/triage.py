"""Celery task that recomputes a benchmark's triage (queued by runs and imports when they finish)."""

from __future__ import annotations

import logging

from celery import shared_task

from annotations.models import Job
from annotations.services.jobs import job_claim, job_fail, job_finish, job_progress_callback
from annotations.services.triage import benchmark_triage

log = logging.getLogger(__name__)


@shared_task(name="annotations.triage_benchmark")
def triage_benchmark_task(job_id: int) -> None:
    """Recompute the triage of the job's benchmark. Idempotent: the job is claimed by a
    conditional UPDATE, and a recomputation replaces the previous results whole."""
    if not job_claim(job_id=job_id):
        return
    job = Job.objects.select_related("benchmark").get(pk=job_id)
    if job.benchmark is None:
        job_fail(job_id=job_id, message="The benchmark no longer exists.")
        return
    try:
        result = benchmark_triage(
            benchmark=job.benchmark, progress=job_progress_callback(job_id, every=200)
        )
    except Exception as error:
        log.exception("triage of benchmark %s failed", job.benchmark_id)
        job_fail(job_id=job_id, message=str(error) or error.__class__.__name__)
        raise
    job_finish(job_id=job_id, result={"benchmark": job.benchmark.name, **result.summary})
