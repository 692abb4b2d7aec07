"""Celery tasks of model runs: one task per chunk, so that workers share a run, and the reaper's
kinds that put back in the queue what a dead worker left (see `annotations.services.recovery`)."""

from __future__ import annotations

from celery import shared_task
from django.db.models import Exists, OuterRef, Q

from annotations.models import Run, RunChunk, RunKind, RunStatus
from annotations.services import runs as run_services
from annotations.services.recovery import Kind, register


@shared_task(name="annotations.run_chunk_execute", acks_late=True, reject_on_worker_lost=True)
def run_chunk_execute(chunk_id: int) -> None:
    """Answer chunk `chunk_id`'s missing items, then the run's next waiting chunks for a while.
    Idempotent: each claim is a conditional UPDATE (queued → running) with a lease, so a chunk
    taken by another worker is left to it; items already predicted are skipped."""
    run_services.chunk_task(chunk_id=chunk_id)


@shared_task(name="annotations.run_execute", acks_late=True, reject_on_worker_lost=True)
def run_execute(run_id: int) -> None:
    """Send run `run_id`'s waiting chunks again and finish it when none is left (the reaper's
    task for a run; it also cuts a run from before chunks into chunks)."""
    run_services.run_resume(run_id=run_id)


def _chunks(*statuses: str) -> Exists:
    return Exists(RunChunk.objects.filter(run_id=OuterRef("pk"), status__in=statuses))


# A chunk whose worker died goes back to the queue and its task is sent again.
register(
    Kind(
        name="run-chunk",
        rows=lambda: RunChunk.objects.all(),
        running=Q(status=RunStatus.RUNNING),
        # A waiting chunk's lost message is sent again through its run (below): a long queue of
        # chunks waiting for busy workers is not resent chunk by chunk.
        waiting=Q(pk__in=[]),
        requeue={"status": RunStatus.QUEUED},
        send=lambda pk: run_chunk_execute.delay(pk),
    )
)
# A run whose chunks all ended but whose worker died before finishing it is finished; a run with
# waiting chunks and none being answered for a while gets their tasks sent again.
register(
    Kind(
        name="run",
        rows=lambda: Run.objects.exclude(kind=RunKind.HUMAN),
        running=Q(status=RunStatus.RUNNING) & ~Q(_chunks(RunStatus.QUEUED, RunStatus.RUNNING)),
        waiting=Q(status__in=(RunStatus.QUEUED, RunStatus.RUNNING))
        & ~Q(_chunks(RunStatus.RUNNING)),
        requeue={"status": RunStatus.RUNNING},
        send=lambda pk: run_execute.delay(pk),
    )
)
