"""Answering a run, chunk by chunk; finishing and failing it.

A chunk's Celery task calls `chunk_task` (one task per chunk, so workers share a run);
`run_execute` answers every chunk in this process (the `run_model` command and the bench).
Their guarantees:

- Exactly one Prediction per (run, item): the database's unique constraint decides, so a chunk
  answered again (its worker died) skips every item already stored and never duplicates one. A
  request in flight when a worker died is sent again by the next one; its answer is stored once.
- A chunk is claimed with a lease (a conditional UPDATE, `recovery.lease_claim`) and beaten
  while it is answered; the reaper puts a chunk whose heartbeat went quiet back in the queue.
  Its final write is conditional on the lease: a worker that was only slow, and was replaced,
  cannot write over its successor.
- Cancellation is a conditional UPDATE of the run's status; the executor (`answer`) looks at it
  every `poll_seconds`, stops handing out items, stores the answers in flight and ends.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from django.db.models import Count, F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotations.models import ItemKind, Prediction, Run, RunChunk, RunStatus
from annotations.selectors.runs import chunk_pending_items, run_has_active_chunks, run_items
from annotations.services.recovery import Lease, lease_claim, lease_update
from annotations.services.runs.answer import (
    ACTIVE,
    ChunkAnswerer,
    Claimed,
    ProgressCallback,
)
from annotations.services.runs.chunks import CHUNK_TASK_SECONDS, chunks_send, run_chunks_plan
from annotations.services.runs.providers import Provider, embedder_for, judge_for, provider_for
from annotations.services.runs.scoring import run_summarize
from annotations.services.runs.task_scores import retrieval_ranks_store
from annotations.services.triage import triage_schedule

log = logging.getLogger(__name__)

ENDED = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)


def run_execute(
    *,
    run_id: int,
    provider: Provider | None = None,
    progress: ProgressCallback | None = None,
    poll_seconds: float = 0.5,
) -> Run | None:
    """Answer every waiting chunk of the run in this process, then score it. Idempotent.

    Returns None when the run had ended already (done, failed or cancelled). `progress(n)` is
    called with the number of predictions stored by each step.
    """
    run = Run.objects.select_related("benchmark", "endpoint", "judge").filter(pk=run_id).first()
    if run is None or run.status not in ACTIVE:
        return None
    run_chunks_plan(run=run, total=run.total)  # a run from before chunks has none
    try:
        provider = provider or provider_for(run)  # one baseline for all chunks
    except Exception as error:
        run_fail(run_id=run_id, error=str(error) or error.__class__.__name__)
        raise
    _answer_chunks(run, provider=provider, progress=progress, poll_seconds=poll_seconds)
    return run_settle(run_id=run_id) or Run.objects.get(pk=run_id)


def chunk_task(*, chunk_id: int, seconds: float = CHUNK_TASK_SECONDS) -> None:
    """A chunk's Celery task: answer the chunk, then the run's next waiting chunks for up to
    `seconds`, so that a worker goes from chunk to chunk without waiting for the broker (their
    own tasks then find them taken). A task whose chunk another worker took helps with the rest."""
    runs = Run.objects.select_related("benchmark", "endpoint", "judge").filter(chunks=chunk_id)
    run = runs.first()
    if run is None or run.status not in ACTIVE:
        return
    _answer_chunks(run, first=chunk_id, until=time.monotonic() + seconds)


def chunk_execute(
    *,
    chunk_id: int,
    provider: Provider | None = None,
    progress: ProgressCallback | None = None,
    poll_seconds: float = 0.5,
) -> str | None:
    """Answer this one chunk's items that have no prediction yet; its final status, or None
    when it was not waiting (another worker has it, or it ended) or was taken over meanwhile."""
    chunks = RunChunk.objects.select_related("run__benchmark", "run__endpoint", "run__judge")
    chunk = chunks.filter(pk=chunk_id).first()
    if chunk is None:
        return None
    ended = _answer_chunks(
        chunk.run,
        first=chunk_id,
        only_first=True,
        provider=provider,
        progress=progress,
        poll_seconds=poll_seconds,
    )
    return ended.get(chunk_id)


def _answer_chunks(
    run: Run,
    *,
    first: int | None = None,
    only_first: bool = False,
    until: float | None = None,
    provider: Provider | None = None,
    progress: ProgressCallback | None = None,
    poll_seconds: float = 0.5,
) -> dict[int, str | None]:
    """Answer waiting chunks of the run (`first` first, or only it), until none is left, the run
    has ended, or the clock passed `until`; how each chunk ended (None: taken over)."""
    claimed = _chunk_claim(first) if first is not None else None
    if claimed is None and not only_first:
        claimed = _claim_next(run.pk)
    if claimed is None:
        return {}
    ended: dict[int, str | None] = {}

    def next_chunk() -> Claimed | None:
        if only_first or (until is not None and time.monotonic() > until):
            return None
        return _claim_next(run.pk)

    def chunk_ended(lease: Lease, status: str | None) -> None:
        ended[lease.pk] = status
        if status is None:
            log.warning("run %s: chunk %s was taken over by another worker", run.pk, lease.pk)
        run_settle(run_id=run.pk)

    with ThreadPoolExecutor(max(1, run.concurrency), thread_name_prefix=f"run{run.pk}") as pool:
        answerer = None
        try:
            answerer = ChunkAnswerer(
                run=run,
                pool=pool,
                provider=provider or provider_for(run),
                judge=judge_for(run),
                embedder=embedder_for(run) if _has_retrieval(run) else None,
                next_chunk=next_chunk,
                ended=chunk_ended,
                progress=progress,
                poll_seconds=poll_seconds,
            )
            answerer.answer(claimed)
        except Exception as error:
            leases = answerer.open_leases() if answerer else [claimed.lease]
            _chunks_fail(run.pk, leases, str(error) or error.__class__.__name__)
            raise
        finally:
            if answerer is not None:
                answerer.close_all()
    return ended


def _has_retrieval(run: Run) -> bool:
    items = run_items(benchmark=run.benchmark, filters=run.filters, limited=False)
    return items.filter(kind=ItemKind.RETRIEVAL).exists()


def _chunks_fail(run_id: int, leases: list[Lease], message: str) -> None:
    for lease in leases:
        lease_update(
            lease, status=RunStatus.FAILED, error=message[:2000], finished_at=timezone.now()
        )
    run_fail(run_id=run_id, error=message)


def _claim_next(run_id: int) -> Claimed | None:
    """Claim the run's first waiting chunk (one another worker takes meanwhile is skipped)."""
    while (chunk_id := _next_waiting(run_id)) is not None:
        if (claimed := _chunk_claim(chunk_id)) is not None:
            return claimed
    return None


def _next_waiting(run_id: int) -> int | None:
    waiting = RunChunk.objects.filter(run_id=run_id, status=RunStatus.QUEUED).order_by("number")
    return waiting.values_list("pk", flat=True).first()


def _chunk_claim(chunk_id: int) -> Claimed | None:
    lease = lease_claim(
        RunChunk.objects.filter(status=RunStatus.QUEUED),
        chunk_id,
        status=RunStatus.RUNNING,
        started_at=Coalesce(F("started_at"), timezone.now()),
    )
    if lease is None:
        return None
    chunk = RunChunk.objects.select_related("run__benchmark", "run__endpoint", "run__judge").get(
        pk=chunk_id
    )
    return Claimed(chunk, lease, chunk_pending_items(chunk=chunk, run=chunk.run))


def run_resume(*, run_id: int) -> None:
    """Send the run's waiting chunks again, and finish it when none is left (the reaper sends
    this for a run whose chunk messages or whose finish were lost with a worker)."""
    run = Run.objects.select_related("benchmark").filter(pk=run_id, status__in=ACTIVE).first()
    if run is None:
        return
    run_chunks_plan(run=run, total=run.total)
    chunks_send(run_id=run_id)
    run_settle(run_id=run_id)


def run_settle(*, run_id: int) -> Run | None:
    """Finish the run when none of its chunks is waiting or being answered any more."""
    Run.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())
    if run_has_active_chunks(run_id=run_id):
        return None
    return run_finish(run_id=run_id)


def run_fail(*, run_id: int, error: str) -> None:
    """Record a run that could not go on (its predictions so far are kept); its waiting chunks
    are cancelled, and chunks being answered elsewhere stop at their next look at the run."""
    now = timezone.now()
    failed = Run.objects.filter(pk=run_id, status__in=ACTIVE).update(
        status=RunStatus.FAILED, error=error[:2000], finished_at=now
    )
    if failed:
        RunChunk.objects.filter(run_id=run_id, status=RunStatus.QUEUED).update(
            status=RunStatus.CANCELLED, finished_at=now
        )


def run_finish(*, run_id: int) -> Run:
    """Recount and score the run; an active run becomes DONE, an ended one keeps its status."""
    run = Run.objects.get(pk=run_id)
    predictions = Prediction.objects.filter(run_id=run_id)
    counts = predictions.aggregate(completed=Count("pk"), failed=Count("pk", filter=~Q(error="")))
    retrieval_ranks_store(run=run)
    summary = run_summarize(run=run)
    Run.objects.filter(pk=run_id).update(summary=summary, **counts)
    finished = Run.objects.filter(pk=run_id, status__in=ACTIVE).update(
        status=RunStatus.DONE, finished_at=timezone.now()
    )
    if finished:
        # New answers change the model-consensus evidence: recompute the benchmark's triage.
        triage_schedule(benchmark_id=run.benchmark_id)
    run.refresh_from_db()
    return run
