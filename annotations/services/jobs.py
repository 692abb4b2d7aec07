"""Background jobs with visible progress, shared by workers and surviving their death.

A chunked job (degradation, triage, Gastric-X import) runs in two kinds of task. The job's task claims the job,
plans it (`ChunkedWork.plan`) and stores the plan as chunks, in one transaction; each chunk is a
task of its own that any worker takes (`chunk_run`), so more workers finish a large job sooner.
The chunk that ends last takes the job's lease again and finishes the job (`ChunkedWork.finish`).

Jobs and chunks hold leases (`annotations.services.recovery`): a worker that dies leaves a
running chunk (or a job being planned or finished) whose heartbeat goes quiet; the reaper puts it
back in the queue and its task resumes from what is stored. Progress is written after each piece
of work has committed, in its own short transaction, never inside the work's transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction
from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Greatest
from django.utils import timezone
from django.utils.translation import gettext as _

from annotations.models import Job, JobChunk, JobStatus
from annotations.services import dispatch
from annotations.services.errors import DomainError
from annotations.services.recovery import (
    Kind,
    Lease,
    LeaseLost,
    heartbeat,
    lease_claim,
    lease_update,
)

log = logging.getLogger(__name__)

OPEN = (JobStatus.QUEUED, JobStatus.RUNNING)
ENDED = (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)
CHUNKED_KINDS = ("degrade", "triage")

Progress = Callable[[int], None]
Check = Callable[[], None]


def job_create(*, kind: str, params: dict, user=None, benchmark=None, total: int = 0) -> Job:
    return Job.objects.create(
        kind=kind, params=params, created_by=user, benchmark=benchmark, total=total
    )


# --- the single-task jobs (imports) -----------------------------------------------------------


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


# --- chunked jobs -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedChunk:
    params: dict  # what the chunk covers (stored on it)
    total: int  # its steps, for progress


@dataclass(frozen=True)
class ChunkedWork:
    """How one kind of job is split, worked and finished.

    `plan(job)` runs inside the transaction that stores the chunks; `work(job, chunk, progress,
    check)` does one chunk, resuming from what is stored, calls `progress(n)` outside its own
    transactions and `check()` between pieces (it raises when the chunk must stop), and returns
    the chunk's result; `finish(job, chunks)` runs once every chunk is done and returns the job's
    result. Each must be idempotent: any of them may be cut short and run again.
    """

    kind: str
    plan: Callable[[Job], list[PlannedChunk]]
    work: Callable[[Job, JobChunk, Progress, Check], dict]
    finish: Callable[[Job, list[JobChunk]], dict]


class JobEnded(Exception):
    """The job failed or was cancelled meanwhile: its other chunks stop."""


class JobRefused(DomainError):
    """Planning or finishing refuses the job (bad input): it fails with `result` (e.g. every
    problem of an import) beside the message."""

    def __init__(self, message: str, *, result: dict, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.result = result


def job_recovery_kind(kind: str, send: Callable[[int], object]) -> Kind:
    """The reaper's view of a chunked job kind: a running job is the reaper's business only
    while no chunk is open (being planned or finished); its chunks are looked after as chunks."""
    return Kind(
        name=kind,
        rows=lambda: Job.objects.filter(kind=kind),
        running=Q(status=JobStatus.RUNNING) & ~Q(chunks__status__in=OPEN),
        waiting=Q(status=JobStatus.QUEUED),
        requeue={"status": JobStatus.QUEUED},
        send=send,
    )


def chunk_recovery_kind(send: Callable[[int], object]) -> Kind:
    return Kind(
        name="job-chunk",
        rows=lambda: JobChunk.objects.all(),
        running=Q(status=JobStatus.RUNNING),
        waiting=Q(status=JobStatus.QUEUED, job__status=JobStatus.RUNNING),
        requeue={"status": JobStatus.QUEUED},
        send=send,
    )


def job_start(*, job_id: int, work: ChunkedWork) -> None:
    """The job's task: claim the queued job, plan it into chunks (once) and send them; a job
    with nothing (left) to do is finished at once. Idempotent: a claimed job is left alone."""
    claimable = Job.objects.filter(kind=work.kind, status=JobStatus.QUEUED)
    lease = lease_claim(claimable, job_id, status=JobStatus.RUNNING, finished_at=None)
    if lease is not None:
        _job_advance(lease, work)


def chunk_run(*, chunk_id: int, works: dict[str, ChunkedWork]) -> None:
    """A chunk's task: claim it, do it (from what is stored), and finish the job if it was the
    last one open. A chunk whose job is not running stays where it is."""
    claimable = JobChunk.objects.filter(status=JobStatus.QUEUED, job__status=JobStatus.RUNNING)
    lease = lease_claim(claimable, chunk_id, status=JobStatus.RUNNING, finished_at=None)
    if lease is None:
        return
    chunk = JobChunk.objects.select_related("job__benchmark", "job__created_by").get(pk=chunk_id)
    work = works[chunk.job.kind]
    with heartbeat(lease):
        try:
            _chunk_restart(lease, chunk)
            result = work.work(
                chunk.job, chunk, _chunk_progress(lease, chunk.job_id), _chunk_check(lease, chunk)
            )
        except LeaseLost:
            return
        except JobEnded:
            lease_update(lease, status=JobStatus.CANCELLED, finished_at=timezone.now())
            return
        except DomainError as error:
            _chunk_fail(lease, chunk, str(error))
            return
        except Exception as error:
            log.exception("chunk %s of job %s failed", chunk.number, chunk.job_id)
            _chunk_fail(lease, chunk, f"{type(error).__name__}: {error}")
            raise
        job_lease = _chunk_finish(lease, chunk.job_id, result)
    if job_lease is not None:
        _job_advance(job_lease, work)


def _job_advance(lease: Lease, work: ChunkedWork) -> None:
    with heartbeat(lease):
        job = Job.objects.select_related("benchmark", "created_by").get(pk=lease.pk)
        try:
            if not job.chunks.exists() and _job_plan(lease, job, work) is None:
                return
            queued = list(job.chunks.filter(status__in=OPEN).values_list("pk", "status"))
            if queued:
                _send_chunks([pk for pk, status in queued if status == JobStatus.QUEUED])
                return
            result = work.finish(job, list(job.chunks.all()))
        except LeaseLost:
            return
        except DomainError as error:
            _job_end(lease, str(error), getattr(error, "result", None))
            return
        except Exception as error:
            log.exception("%s job %s failed", job.kind, job.pk)
            _job_end(lease, f"{type(error).__name__}: {error}")
            raise
        lease_update(
            lease,
            status=JobStatus.DONE,
            result=result,
            message="",
            done=F("total"),
            finished_at=timezone.now(),
        )


def _job_plan(lease: Lease, job: Job, work: ChunkedWork) -> list[JobChunk] | None:
    """Store the job's plan as chunks (none when there is nothing to do); None if the lease
    was lost meanwhile."""
    with transaction.atomic():
        planned = work.plan(job)
        if not lease_update(lease, total=sum(c.total for c in planned), done=0):
            return None
        return JobChunk.objects.bulk_create(
            JobChunk(job_id=job.pk, number=number, params=chunk.params, total=chunk.total)
            for number, chunk in enumerate(planned)
        )


def _send_chunks(chunk_ids: list[int]) -> None:
    for pk in chunk_ids:
        dispatch.enqueue(dispatch.JOB_CHUNK, pk)


def _chunk_restart(lease: Lease, chunk: JobChunk) -> None:
    # Progress is counted afresh by each attempt (work already stored is counted at once): what
    # a dead worker counted may not have been committed.
    if chunk.done:
        with transaction.atomic():
            if lease_update(lease, done=0):
                Job.objects.filter(pk=chunk.job_id).update(
                    done=Greatest(F("done") - chunk.done, Value(0))
                )
        chunk.done = 0


def _chunk_progress(lease: Lease, job_id: int) -> Progress:
    def update(n: int = 1) -> None:
        if n <= 0:
            return
        with transaction.atomic():
            if lease_update(lease, done=F("done") + n):
                # The job's heartbeat says when a worker last did something for it.
                Job.objects.filter(pk=job_id).update(
                    done=F("done") + n, heartbeat_at=timezone.now()
                )

    return update


def _chunk_check(lease: Lease, chunk: JobChunk) -> Check:
    def check() -> None:
        lease.check()
        if not Job.objects.filter(pk=chunk.job_id, status=JobStatus.RUNNING).exists():
            raise JobEnded

    return check


def _chunk_finish(lease: Lease, job_id: int, result: dict) -> Lease | None:
    """Mark the chunk done; the job's lease when it was the last open chunk."""
    with transaction.atomic():
        # One chunk of a job ends at a time, so exactly one of them sees that none is left.
        list(Job.objects.select_for_update().filter(pk=job_id).values_list("pk"))
        if not lease_update(
            lease, status=JobStatus.DONE, result=result, finished_at=timezone.now()
        ):
            return None
        if JobChunk.objects.filter(job_id=job_id).exclude(status=JobStatus.DONE).exists():
            return None
        # The job's own lease, taken on where its planning left it: a job that a worker claims
        # again (after the reaper requeued it) has a new one, which fences this one off.
        running = Job.objects.filter(pk=job_id, status=JobStatus.RUNNING)
        attempt = running.values_list("attempts", flat=True).first()
        if attempt is None or not running.update(heartbeat_at=timezone.now()):
            return None
        return Lease(Job, job_id, attempt)


def _chunk_fail(lease: Lease, chunk: JobChunk, message: str) -> None:
    with transaction.atomic():
        if lease_update(
            lease, status=JobStatus.FAILED, result={"message": message}, finished_at=timezone.now()
        ):
            message = _("Part %(number)d: %(message)s") % {
                "number": chunk.number + 1,
                "message": message,
            }
            _job_fail_open(Job.objects.filter(pk=chunk.job_id, status__in=OPEN), message)


def _job_end(lease: Lease, message: str, result: dict | None = None) -> None:
    with transaction.atomic():
        _job_fail_open(Job.objects.filter(pk=lease.pk, attempts=lease.attempt), message, result)


def _job_fail_open(job: QuerySet[Job], message: str, result: dict | None = None) -> None:
    """Fail the job (a filtered queryset of one) and cancel its chunks no worker has taken;
    running chunks see it at their next check."""
    job_ids = list(job.values_list("pk", flat=True))
    fields: dict[str, object] = {} if result is None else {"result": result}
    failed = job.update(
        status=JobStatus.FAILED, message=message[:2000], finished_at=timezone.now(), **fields
    )
    if failed:
        JobChunk.objects.filter(job_id__in=job_ids, status=JobStatus.QUEUED).update(
            status=JobStatus.CANCELLED
        )


@transaction.atomic
def job_retry(*, job: Job) -> Job:
    """Send a failed job back to the queue. A degradation or triage job keeps the chunks already
    done and does the others again (from what is stored); an import starts over from its kept
    upload (an import refused for bad input has none: its file is fixed and uploaded again)."""
    if job.kind not in (*CHUNKED_KINDS, "import"):
        raise DomainError(_("This kind of job is not retried here."), code="not_retryable")
    if job.kind == "import" and not Path(job.params.get("path") or "").is_file():
        raise DomainError(
            _("The uploaded file is no longer kept: fix it and upload it again."),
            code="upload_gone",
        )
    reopened = Job.objects.filter(pk=job.pk, status__in=(JobStatus.FAILED, JobStatus.CANCELLED))
    fields: dict[str, object] = {"status": JobStatus.QUEUED, "message": "", "finished_at": None}
    if job.kind == "import":
        fields.update(done=0, result={})
    if not reopened.update(**fields, heartbeat_at=timezone.now()):
        raise DomainError(_("Only a failed job can be retried."), code="not_ended")
    if job.kind == "import":
        # A failed import removed every case's files: it is planned again from the upload.
        JobChunk.objects.filter(job_id=job.pk).delete()
    JobChunk.objects.filter(job_id=job.pk).exclude(status=JobStatus.DONE).update(
        status=JobStatus.QUEUED, heartbeat_at=timezone.now()
    )
    transaction.on_commit(lambda: job_send(job_id=job.pk, kind=job.kind))
    job.refresh_from_db()
    return job


def job_send(*, job_id: int, kind: str) -> None:
    """Send a job's task (after the commit that queued it)."""
    dispatch.send(dispatch.JOB_TASKS[kind], job_id)
