"""Importing an uploaded file on a worker, crash-safe.

The job is claimed with a lease and beats while it runs. If its worker dies, the reaper puts it
back in the queue and the next attempt starts over cleanly: it first discards what the dead
attempt staged (and any file it placed whose rows never committed), then imports from the
upload, which is kept until the import succeeds or is refused for bad input.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import asdict
from pathlib import Path

from celery import shared_task
from django.db import IntegrityError
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext

from annotations.models import Benchmark, Family, Job, JobStatus
from annotations.services.cases import earlier_attempts_discard
from annotations.services.errors import DomainError
from annotations.services.gastricx_jobs import GASTRICX_IMPORT_WORK
from annotations.services.images import import_work_dir
from annotations.services.imports import (
    ImportFailed,
    ImportProgress,
    ImportResult,
    benchmark_import_run,
)
from annotations.services.jobs import OPEN, job_start
from annotations.services.recovery import (
    Kind,
    Lease,
    LeaseLost,
    heartbeat,
    lease_claim,
    lease_update,
    register,
)

log = logging.getLogger(__name__)

# Progress counts KiB of the file read, so a 2 GiB upload fits the job's integer columns.
_PROGRESS_UNIT = 1024
MAX_LISTED_PROBLEMS = 500


def _import_jobs():
    return Job.objects.filter(kind="import")


@shared_task(name="annotations.benchmark_import")
def benchmark_import_task(job_id: int) -> None:
    """Import the job's uploaded file as a benchmark; the job records the result, its
    warnings, or every problem. Idempotent: only a queued job is claimed. A Gastric-X import is
    planned into a chunk per case that any worker takes (`services.gastricx_jobs`)."""
    family = _import_jobs().filter(pk=job_id).values_list("params__family", flat=True).first()
    if family == Family.GASTRICX:
        job_start(job_id=job_id, work=GASTRICX_IMPORT_WORK)
        return
    lease = lease_claim(_import_jobs().filter(status=JobStatus.QUEUED), job_id, status="running")
    if lease is None:
        return
    job = Job.objects.get(pk=job_id)
    try:
        with heartbeat(lease):
            _run(job, lease)
    except LeaseLost:
        log.warning("import job %s was taken over by another worker", job_id)


register(
    Kind(
        name="import",
        rows=_import_jobs,
        # A Gastric-X import with open chunks is looked after as chunks.
        running=Q(status=JobStatus.RUNNING) & ~Q(chunks__status__in=OPEN),
        waiting=Q(status=JobStatus.QUEUED),
        requeue={"status": JobStatus.QUEUED},
        send=lambda pk: benchmark_import_task.delay(pk),
    )
)


def _run(job: Job, lease: Lease) -> None:
    params = job.params
    upload = Path(params["path"])
    # A folder per attempt: a replaced worker that was only slow undoes its own files, never
    # its successor's.
    work_dir = import_work_dir(f"job-{job.pk}-{lease.attempt}")
    removed = earlier_attempts_discard(work_dir)  # what a dead attempt left
    if removed:
        log.warning("import job %s: undid earlier attempts (%d files)", job.pk, removed)
    if not upload.is_file():
        _fail(lease, "The uploaded file is gone; upload it again.", {})
        return
    size = upload.stat().st_size
    lease_update(lease, total=max(1, size // _PROGRESS_UNIT), done=0, result={})
    user = job.created_by
    try:
        benchmark_import_run(
            path=upload,
            family=params["family"],
            name=params["name"],
            user=user,
            progress=lambda state: _progress(lease, state, size),
            work_dir=work_dir,
            before_commit=lambda result: _finish(lease, result),
        )
    except ImportFailed as error:
        _fail(lease, str(error), {**_problems(error), **error.report.as_result()})
    except DomainError as error:
        _fail(lease, str(error), {})
    except LeaseLost:
        raise
    except Exception as error:
        if isinstance(error, IntegrityError) and _name_taken(params["name"]):
            # Another import of the same name committed first: a refusal, nothing to retry.
            message = gettext("A benchmark with this name already exists.")
            _fail(lease, message, {"code": "name_taken"})
        else:
            # Kept: the upload, for a retry once the cause is fixed.
            log.exception("import job %s failed", job.pk)
            lease_update(
                lease,
                status=JobStatus.FAILED,
                message=f"{type(error).__name__}: {error}",
                finished_at=timezone.now(),
            )
            raise
    # Imported, or refused for bad input: the upload has served.
    shutil.rmtree(upload.parent, ignore_errors=True)


def _name_taken(name: str) -> bool:
    return Benchmark.objects.filter(name=name).exists()


def _progress(lease: Lease, state: ImportProgress, size: int) -> None:
    lease.check()
    total = max(1, size // _PROGRESS_UNIT)
    done = int(total * state.fraction)
    lease_update(lease, done=done, result={"stage": state.stage, "items": state.items})


def _finish(lease: Lease, result: ImportResult) -> None:
    """Inside the import's transaction: the job ends with the rows, or neither does."""
    summary = {"benchmark": result.benchmark.name, "items": result.items}
    written = lease_update(
        lease,
        status=JobStatus.DONE,
        result={**summary, **result.report.as_result()},
        finished_at=timezone.now(),
        done=F("total"),
    )
    if not written:
        raise LeaseLost(f"import job {lease.pk} was taken over by another worker")


def _fail(lease: Lease, message: str, result: dict) -> None:
    lease_update(
        lease, status=JobStatus.FAILED, message=message, result=result, finished_at=timezone.now()
    )


def _problems(error: ImportFailed) -> dict:
    return {
        "problems": [asdict(problem) for problem in error.problems[:MAX_LISTED_PROBLEMS]],
        "problems_total": len(error.problems),
    }
