"""Answering a run, chunk by chunk, with bounded concurrency; finishing and failing it.

A chunk is answered by `chunk_execute`, which the Celery task calls (one task per chunk, so
workers share a run); `run_execute` answers every chunk in this process (the `run_model`
command and the bench). Their guarantees:

- Exactly one Prediction per (run, item): the database's unique constraint decides, and a
  prediction is only inserted through `get_or_create`, so a chunk answered again (its worker
  died) skips every item already stored and never duplicates one. A request in flight when a
  worker died is sent again by the next one; its answer is stored once.
- A chunk is claimed with a lease (a conditional UPDATE, `recovery.lease_claim`) and beaten
  while it is answered; the reaper puts a chunk whose heartbeat went quiet back in the queue.
- Network calls run in a `ThreadPoolExecutor` of `run.concurrency` threads; every database
  write happens on the calling thread, one short transaction per batch of answers, so the pool
  never holds a connection and progress shows at once (run page, tqdm).
- Cancellation is a conditional UPDATE of the run's status; the executor looks at it every
  `poll_seconds`, stops submitting, stores the answers in flight and ends its chunk.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotations.inference import (
    BaselineProvider,
    ChatProvider,
    Completion,
    InferenceItem,
    ProviderError,
    predict,
)
from annotations.models import Image, Item, Prediction, Run, RunChunk, RunStatus
from annotations.selectors.runs import chunk_pending_items, run_has_active_chunks
from annotations.services.images import image_bytes
from annotations.services.recovery import Lease, LeaseLost, heartbeat, lease_claim, lease_update
from annotations.services.runs.chunks import CHUNK_TASK_SECONDS, chunks_send, run_chunks_plan
from annotations.services.runs.providers import Provider, judge_for, provider_for
from annotations.services.runs.scoring import UNANSWERED, Scored, reply_score, run_summarize
from annotations.services.triage import triage_schedule

log = logging.getLogger(__name__)

ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)
ENDED = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)

ProgressCallback = Callable[[int], None]


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
    _answer_waiting_chunks(
        run, provider=provider, progress=progress, poll_seconds=poll_seconds, until=None
    )
    return run_settle(run_id=run_id) or Run.objects.get(pk=run_id)


def chunk_task(*, chunk_id: int, seconds: float = CHUNK_TASK_SECONDS) -> None:
    """A chunk's Celery task: answer the chunk, then the run's next waiting chunks for up to
    `seconds`, so that a worker goes from chunk to chunk without waiting for the broker (their
    own tasks then find them taken). A task whose chunk another worker took helps with the rest."""
    run = Run.objects.select_related("benchmark", "endpoint", "judge").filter(chunks=chunk_id)
    run = run.first()
    if run is None or run.status not in ACTIVE:
        return
    _answer_waiting_chunks(
        run, first=chunk_id, provider=None, progress=None, poll_seconds=0.5,
        until=time.monotonic() + seconds,
    )  # fmt: skip


def _answer_waiting_chunks(
    run: Run,
    *,
    provider: Provider | None,
    progress: ProgressCallback | None,
    poll_seconds: float,
    until: float | None,
    first: int | None = None,
) -> None:
    """Answer waiting chunks of the run one after the other (`first` first), until none is left,
    the run has ended, or the clock passed `until`. One thread pool for all (its threads keep
    their connections), and the next chunk is claimed and read while the last round of the
    current one is in flight, so the endpoint waits as little as possible between chunks."""
    claimed = (_chunk_claim(first) if first is not None else None) or _claim_next(run.pk)
    with _pool(run) as pool:
        while claimed is not None:
            ahead: list[_Claimed] = []
            try:
                status = _chunk_answer(
                    claimed,
                    provider=provider,
                    progress=progress,
                    poll_seconds=poll_seconds,
                    pool=pool,
                    on_last_round=partial(_claim_ahead, run.pk, until, ahead),
                )
            except BaseException:
                _release(ahead)
                raise
            if status == RunStatus.CANCELLED:
                _release(ahead)
                return
            claimed = ahead[0] if ahead else None


def _claim_ahead(run_id: int, until: float | None, ahead: list[_Claimed]) -> None:
    if until is None or time.monotonic() < until:
        ahead.extend(filter(None, [_claim_next(run_id)]))


def _claim_next(run_id: int) -> _Claimed | None:
    """Claim the run's first waiting chunk (one another worker takes meanwhile is skipped)."""
    while (chunk_id := _next_waiting(run_id)) is not None:
        if (claimed := _chunk_claim(chunk_id)) is not None:
            return claimed
    return None


def _next_waiting(run_id: int) -> int | None:
    waiting = RunChunk.objects.filter(run_id=run_id, status=RunStatus.QUEUED).order_by("number")
    return waiting.values_list("pk", flat=True).first()


def _release(claimed: list[_Claimed]) -> None:
    """Chunks claimed ahead but not answered go back to the queue, their tasks sent again (their
    first message may have found them taken)."""
    for each in claimed:
        # Conditional on the lease, and on the chunk not cancelled with its run meanwhile.
        still_ours = RunChunk.objects.filter(
            pk=each.lease.pk, attempts=each.lease.attempt, status=RunStatus.RUNNING
        )
        if still_ours.update(status=RunStatus.QUEUED):
            transaction.on_commit(lambda pk=each.chunk.pk: _send_chunk(pk))


def _send_chunk(chunk_id: int) -> None:
    from annotations.tasks.runs import run_chunk_execute  # import cycle

    run_chunk_execute.delay(chunk_id)


def run_resume(*, run_id: int) -> None:
    """Send the run's waiting chunks again, and finish it when none is left (the reaper sends
    this for a run whose chunk messages or whose finish were lost with a worker)."""
    run = Run.objects.select_related("benchmark").filter(pk=run_id, status__in=ACTIVE).first()
    if run is None:
        return
    run_chunks_plan(run=run, total=run.total)
    chunks_send(run_id=run_id)
    run_settle(run_id=run_id)


def chunk_execute(
    *,
    chunk_id: int,
    provider: Provider | None = None,
    progress: ProgressCallback | None = None,
    poll_seconds: float = 0.5,
    pool: ThreadPoolExecutor | None = None,
) -> str | None:
    """Answer the chunk's items that have no prediction yet; its final status, or None when it
    was not waiting (another worker has it, or it ended) or was taken over meanwhile."""
    claimed = _chunk_claim(chunk_id)
    if claimed is None:
        return None
    return _chunk_answer(
        claimed, provider=provider, progress=progress, poll_seconds=poll_seconds, pool=pool
    )


@dataclass
class _Claimed:
    """A chunk this worker holds the lease of, with its items still to answer."""

    chunk: RunChunk
    lease: Lease
    items: list[Item]


def _chunk_claim(chunk_id: int) -> _Claimed | None:
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
    return _Claimed(chunk, lease, chunk_pending_items(chunk=chunk, run=chunk.run))


def _chunk_answer(
    claimed: _Claimed,
    *,
    provider: Provider | None,
    progress: ProgressCallback | None,
    poll_seconds: float,
    pool: ThreadPoolExecutor | None,
    on_last_round: Callable[[], None] | None = None,
) -> str | None:
    chunk, lease = claimed.chunk, claimed.lease
    run = chunk.run
    try:
        if not _run_start(run.pk):  # it ended while this chunk waited
            status = RunStatus.CANCELLED
            lease_update(lease, status=status, finished_at=timezone.now())
        else:
            with heartbeat(lease), _pool(run, pool) as chunk_pool:
                executor = _ChunkExecutor(
                    run=run,
                    lease=lease,
                    provider=provider or provider_for(run),
                    judge=judge_for(run),
                    progress=progress,
                    poll_seconds=poll_seconds,
                )
                executor.answer(claimed.items, chunk_pool, on_last_round=on_last_round)
                status = _chunk_end(lease, executor.cancelled)
    except LeaseLost:
        log.warning("run %s: chunk %s was taken over by another worker", run.pk, chunk.number)
        return None
    except Exception as error:
        message = str(error) or error.__class__.__name__
        lease_update(
            lease, status=RunStatus.FAILED, error=message[:2000], finished_at=timezone.now()
        )
        run_fail(run_id=run.pk, error=message)
        raise
    run_settle(run_id=run.pk)
    return status


def _chunk_end(lease: Lease, cancelled: bool) -> str:
    """Its counters were kept with every batch stored; only its status is left to write."""
    lease.check()
    status = RunStatus.CANCELLED if cancelled else RunStatus.DONE
    if not lease_update(lease, status=status, finished_at=timezone.now()):
        raise LeaseLost(f"chunk {lease.pk}")
    return status


def _run_start(run_id: int) -> bool:
    """The run is running from its first chunk on; False when it has ended meanwhile."""
    now = timezone.now()
    return bool(
        Run.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=RunStatus.RUNNING, started_at=Coalesce(F("started_at"), now), heartbeat_at=now
        )
    )


@contextmanager
def _pool(run: Run, pool: ThreadPoolExecutor | None = None) -> Iterator[ThreadPoolExecutor]:
    """The given pool, or a new one of `run.concurrency` threads for this block."""
    if pool is not None:
        yield pool
        return
    with ThreadPoolExecutor(max(1, run.concurrency), thread_name_prefix=f"run{run.pk}") as new:
        yield new


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


# --- the executor ---------------------------------------------------------------------------


@dataclass
class _Answer:
    completion: Completion | None
    error: str = ""
    latency_ms: float | None = None
    scored: Scored | None = None  # the reply's readings (None for a failed request)


@dataclass(frozen=True)
class _Request:
    """What a pool thread needs to answer one item: plain data, no ORM."""

    run_id: int
    family: str
    template: str | None
    with_image: bool
    item: InferenceItem
    images: list[Image]
    answer: str  # the gold letter, to score the reply in the thread


def _answer(provider: Provider, judge: ChatProvider | None, request: _Request) -> _Answer:
    """Runs in a pool thread: read the images from storage and ask the provider (then the judge,
    for an answer the rules cannot read). No ORM here."""
    started = time.perf_counter()
    item = request.item
    try:
        item.images = [image_bytes(image) for image in request.images]
        completion = predict(
            provider,
            item,
            family=request.family,
            template=request.template,
            with_image=request.with_image,
        )
        scored = reply_score(
            family=request.family,
            reply=completion.text,
            question=item.question,
            options=item.options,
            answer=request.answer,
            judge=judge,
            seed=f"{request.run_id}:{item.key}",
        )
        return _Answer(completion, scored=scored)
    except ProviderError as error:
        return _Answer(None, str(error), (time.perf_counter() - started) * 1000)
    except Exception as error:  # a bad image file must fail its item, not the whole run
        log.exception("run %s: item %s failed", request.run_id, item.key)
        return _Answer(None, f"{error.__class__.__name__}: {error}")


class _ChunkExecutor:
    """Keeps `run.concurrency` requests in flight and stores the answers as they arrive.

    Twice as many items as threads are handed to the pool, so a thread that finishes finds the
    next item waiting instead of waiting for this thread's database writes.
    """

    def __init__(
        self,
        *,
        run: Run,
        lease: Lease,
        provider: Provider,
        judge: ChatProvider | None,
        progress: ProgressCallback | None,
        poll_seconds: float,
    ) -> None:
        self.run = run
        self.lease = lease
        self.provider = provider
        self.judge = judge
        self.progress = progress
        self.poll_seconds = poll_seconds
        self.limit = max(1, run.concurrency)
        self.stopped = False
        self.cancelled = False
        self._last_look = time.monotonic()

    def answer(
        self,
        items: list[Item],
        pool: ThreadPoolExecutor,
        *,
        on_last_round: Callable[[], None] | None = None,
    ) -> None:
        """Answer `items`; `on_last_round()` is called once every item has been handed to the
        pool (while the last answers are still on their way)."""
        todo = iter(items)
        pending: dict[Future[_Answer], Item] = {}
        try:
            while True:
                while not self.stopped and len(pending) < 2 * self.limit:
                    item = next(todo, None)
                    if item is None:
                        if on_last_round is not None:
                            on_last_round()
                            on_last_round = None
                        break
                    request = self._request(item)
                    pending[pool.submit(_answer, self.provider, self.judge, request)] = item
                if not pending:
                    return
                done, _running = wait(
                    pending, timeout=self.poll_seconds, return_when=FIRST_COMPLETED
                )
                self._store([(pending.pop(future), future.result()) for future in done])
                self._look()
                if self.stopped:  # items no thread has started are not asked at all
                    for future in [f for f in pending if f.cancel()]:
                        del pending[future]
        finally:
            for future in pending:
                future.cancel()
            wait(pending)  # no thread outlives its chunk's lease

    def _request(self, item: Item) -> _Request:
        run = self.run
        # Baselines never look at images: do not read them from storage for nothing.
        wants_images = run.with_image and not isinstance(self.provider, BaselineProvider)
        return _Request(
            run_id=run.pk,
            family=run.benchmark.family,
            template=(run.endpoint.prompt_template or None) if run.endpoint else None,
            with_image=run.with_image,
            item=InferenceItem(
                key=f"{run.benchmark.name}:{item.source_index}",
                question=item.question,
                options=dict(item.lettered_options),
                hint=item.hint,
                family=run.benchmark.family,
                category=item.category,
            ),
            images=[ii.image for ii in item.item_images.all()] if wants_images else [],
            answer=item.answer,
        )

    def _store(self, batch: list[tuple[Item, _Answer]]) -> None:
        """Store a batch of answers in one short transaction, with the counters.

        An item answered meanwhile by a worker that took this chunk over keeps its answer: the
        unique constraint skips ours (the counters are recounted when the chunk ends)."""
        if not batch:
            return
        with transaction.atomic():
            stored = set(
                Prediction.objects.filter(
                    run_id=self.run.pk, item_id__in=[item.pk for item, _answer in batch]
                ).values_list("item_id", flat=True)
            )
            new = [
                (Prediction(run_id=self.run.pk, item=item, **self._fields(item, answer)), answer)
                for item, answer in batch
                if item.pk not in stored
            ]
            Prediction.objects.bulk_create([p for p, _a in new], ignore_conflicts=True)
            created, failed = len(new), sum(1 for _p, answer in new if answer.error)
            if created:
                counters = {"completed": F("completed") + created, "failed": F("failed") + failed}
                Run.objects.filter(pk=self.run.pk).update(**counters)
                RunChunk.objects.filter(pk=self.lease.pk).update(**counters)
        if created and self.progress:
            self.progress(created)

    def _fields(self, item: Item, answer: _Answer) -> dict[str, Any]:
        completion = answer.completion
        scored = answer.scored
        return {
            "item_version": item.version,
            "raw_text": completion.text if completion else "",
            **(scored.fields(answer=item.answer) if scored else UNANSWERED),
            "error": answer.error[:2000],
            "latency_ms": completion.latency_ms if completion else answer.latency_ms,
            "prompt_tokens": completion.prompt_tokens if completion else None,
            "completion_tokens": completion.completion_tokens if completion else None,
            "attempts": completion.attempts if completion else 1,
        }

    def _look(self) -> None:
        """Every `poll_seconds`: stop when the run has ended (cancelled, failed elsewhere) or
        when another worker took this chunk over."""
        if self.lease.lost.is_set():
            self.stopped = True
            return
        now = time.monotonic()
        if now - self._last_look < self.poll_seconds:
            return
        self._last_look = now
        status = Run.objects.filter(pk=self.run.pk).values_list("status", flat=True).first()
        if status not in ACTIVE:
            self.stopped = self.cancelled = True
