"""Background jobs with visible progress."""

from __future__ import annotations

from collections.abc import Callable

from django.db.models import F
from django.utils import timezone

from annotations.models import Job, JobStatus


def job_create(*, kind: str, params: dict, user=None, benchmark=None, total: int = 0) -> Job:
    return Job.objects.create(
        kind=kind, params=params, created_by=user, benchmark=benchmark, total=total
    )


def job_claim(*, job_id: int) -> bool:
    """Move a queued job to running; False if another worker already has it (or it ended)."""
    return bool(
        Job.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(status=JobStatus.RUNNING)
    )


def job_progress_callback(job_id: int, every: int = 50) -> Callable[[int], None]:
    """A tqdm-like `update(n)` that writes progress to the job every `every` steps."""
    pending = 0

    def update(n: int = 1) -> None:
        nonlocal pending
        pending += n
        if pending >= every:
            Job.objects.filter(pk=job_id).update(done=F("done") + pending)
            pending = 0

    return update


def job_finish(*, job_id: int, result: dict | None = None) -> None:
    Job.objects.filter(pk=job_id).update(
        status=JobStatus.DONE, result=result or {}, finished_at=timezone.now(), done=F("total")
    )


def job_fail(*, job_id: int, message: str, result: dict | None = None) -> None:
    Job.objects.filter(pk=job_id).update(
        status=JobStatus.FAILED, message=message, result=result or {}, finished_at=timezone.now()
    )
