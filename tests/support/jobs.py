"""Running a chunked job's tasks in the test's own process, in the order workers would."""

from __future__ import annotations

from annotations.models import Job, JobChunk, JobStatus
from annotations.tasks.degrade import benchmark_degrade_task
from annotations.tasks.imports import benchmark_import_task
from annotations.tasks.jobs import job_chunk_task
from annotations.tasks.triage import triage_benchmark_task

TASKS = {
    "degrade": benchmark_degrade_task,
    "triage": triage_benchmark_task,
    "import": benchmark_import_task,  # a Gastric-X import is planned into chunks
}


def run_chunks(job_id: int) -> list[int]:
    """Run every queued chunk of the job (the last one finishes the job); their ids."""
    queued = list(
        JobChunk.objects.filter(job_id=job_id, status=JobStatus.QUEUED)
        .order_by("number")
        .values_list("pk", flat=True)
    )
    for pk in queued:
        job_chunk_task(pk)
    return queued


def run_job(job_id: int) -> Job:
    """The job's task (it plans the chunks), then its chunks; the job as it ends."""
    TASKS[Job.objects.get(pk=job_id).kind](job_id)
    run_chunks(job_id)
    return Job.objects.get(pk=job_id)
