"""The executor: `run.concurrency` requests in flight over one claimed chunk after another.

Network calls run in a `ThreadPoolExecutor`; every database write happens on the calling thread,
one short transaction per batch of answers, so the pool never holds a connection and progress
shows at once. When the current chunk's last items are handed to the pool, the next chunk is
claimed and its items go to the pool at once; the chunk before is closed (its status written,
its heartbeat stopped) once its answers are stored, while the next one's are on their way. So
the endpoint does not wait for the bookkeeping between chunks.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import F
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
from annotations.models import Image, Item, ItemKind, Prediction, Run, RunChunk, RunStatus
from annotations.scoring.calibration import confidence_of, letter_distribution
from annotations.services.images import image_bytes
from annotations.services.recovery import Lease, heartbeat, heartbeat_seconds, lease_update
from annotations.services.runs.providers import Provider
from annotations.services.runs.scoring import NOT_SCORED, UNANSWERED, reply_score
from annotations.services.runs.tasks import (
    CHOICE_KINDS,
    TaskInputError,
    TaskRequest,
    choice_options,
    task_answer,
    task_request,
)

log = logging.getLogger(__name__)

ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)

ProgressCallback = Callable[[int], None]


@dataclass
class Claimed:
    """A chunk this worker holds the lease of, with its items still to answer."""

    chunk: RunChunk
    lease: Lease
    items: list[Item]


@dataclass
class _Open:
    """A claimed chunk being answered: its heartbeat, its items not handed out yet, its
    answers not stored yet."""

    claimed: Claimed
    beat: ExitStack
    todo: Iterator[Item]
    outstanding: int = 0
    exhausted: bool = False
    lost: bool = False  # taken over by another worker: its end is not ours to write


@dataclass
class _Answer:
    completion: Completion | None
    error: str = ""
    latency_ms: float | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # per kind: label, box, embedding


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
    # A classification item's labels by letter; other kinds' request, or why it cannot be asked.
    labels: dict[str, str] | None = None
    task: TaskRequest | None = None
    task_error: str = ""
    logprobs: bool = False  # ask for token log-probabilities (the answer's confidence)


def _answer(
    provider: Provider, judge: ChatProvider | None, request: _Request, embedder: Any = None
) -> _Answer:
    """Runs in a pool thread: read the images from storage and ask the provider (then the judge,
    for an answer the rules cannot read). No ORM here."""
    started = time.perf_counter()
    item = request.item
    if request.task_error:
        return _Answer(None, request.task_error)
    try:
        if request.task is not None:
            answered = task_answer(provider, embedder, request.task)
            return _Answer(answered.completion, fields=answered.fields)
        item.images = [image_bytes(image) for image in request.images]
        completion = predict(
            provider,
            item,
            family=request.family,
            template=request.template,
            with_image=request.with_image,
            logprobs=request.logprobs,
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
        fields = scored.fields(answer=request.answer)
        if request.labels is not None:
            fields["label"] = request.labels.get(fields["extracted"], "")
        fields.update(_confidence_fields(completion, item.options, fields["vlmeval_letter"]))
        return _Answer(completion, fields=fields)
    except ProviderError as error:
        return _Answer(None, str(error), (time.perf_counter() - started) * 1000)
    except TaskInputError as error:
        return _Answer(None, str(error))
    except Exception as error:  # a bad image file must fail its item, not the whole run
        log.exception("run %s: item %s failed", request.run_id, item.key)
        return _Answer(None, f"{error.__class__.__name__}: {error}")


def _confidence_fields(
    completion: Completion, options: dict[str, str], letter: str
) -> dict[str, Any]:
    """The letters' distribution at the answer's token and the confidence of VLMEvalKit's
    letter (none when its reading found no letter: a judged answer has no confidence)."""
    distribution = letter_distribution(completion.logprobs, list(options))
    return {"letter_probs": distribution, "confidence": confidence_of(distribution, letter)}


@dataclass
class ChunkAnswerer:
    """Answers `first`, then each chunk `next_chunk()` claims, until it gives none or the run
    ends; `ended(chunk_id, status)` is told how each chunk ended (None: taken over)."""

    run: Run
    pool: ThreadPoolExecutor
    provider: Provider
    judge: ChatProvider | None
    next_chunk: Callable[[], Claimed | None]
    ended: Callable[[Lease, str | None], None]
    embedder: Any = None  # retrieval pairs' OpenAI-compatible embeddings client
    progress: ProgressCallback | None = None
    poll_seconds: float = 0.5
    cancelled: bool = False
    opened: list[_Open] = field(default_factory=list)
    _last_look: float = field(default_factory=time.monotonic)
    _last_beat: float = field(default_factory=time.monotonic)

    @property
    def limit(self) -> int:
        return max(1, self.run.concurrency)

    def answer(self, first: Claimed) -> None:
        pending: dict[Future[_Answer], tuple[_Open, Item]] = {}
        current = self._open(first)
        try:
            while True:
                current = self._hand_out(current, pending)
                if not pending:
                    break
                done, _running = wait(
                    pending, timeout=self.poll_seconds, return_when=FIRST_COMPLETED
                )
                self._store([(*pending.pop(future), future.result()) for future in done])
                self._look(pending)
                self._close_finished()
        finally:
            for future in pending:
                future.cancel()
            wait(pending)  # no thread outlives its chunk's lease
        self._close_finished()

    def open_leases(self) -> list[Lease]:
        """The leases of the chunks not closed (for a caller that failed midway)."""
        return [state.claimed.lease for state in self.opened if not state.lost]

    def close_all(self) -> None:
        for state in self.opened:
            state.beat.close()
        self.opened.clear()

    def _open(self, claimed: Claimed | None) -> _Open | None:
        if claimed is None:
            return None
        if not self.cancelled and not _run_start(self.run.pk):  # it ended meanwhile
            self.cancelled = True
        beat = ExitStack()
        beat.enter_context(heartbeat(claimed.lease))
        state = _Open(claimed, beat, iter(() if self.cancelled else claimed.items))
        self.opened.append(state)
        return state

    def _hand_out(
        self, current: _Open | None, pending: dict[Future[_Answer], tuple[_Open, Item]]
    ) -> _Open | None:
        """Keep twice as many items as threads in the pool: a thread that finishes finds the
        next item waiting instead of waiting for this thread's writes."""
        while current is not None and len(pending) < 2 * self.limit:
            item = next(current.todo, None)
            if item is None:
                current.exhausted = True
                current = None if self.cancelled else self._open(self.next_chunk())
                continue
            future = self.pool.submit(
                _answer, self.provider, self.judge, self._request(item), self.embedder
            )
            pending[future] = (current, item)
            current.outstanding += 1
        return current

    def _close_finished(self) -> None:
        for state in [s for s in self.opened if s.exhausted and s.outstanding == 0]:
            self.opened.remove(state)
            state.beat.close()
            lease = state.claimed.lease
            status = None if state.lost else _chunk_end(lease, self.cancelled)
            self.ended(lease, status)

    def _look(self, pending: dict[Future[_Answer], tuple[_Open, Item]]) -> None:
        """Stop handing out a chunk another worker took over; every `poll_seconds`, stop
        everything when the run has ended (cancelled, or failed elsewhere)."""
        for state in self.opened:
            if state.claimed.lease.lost.is_set() and not state.lost:
                state.lost = True
                state.todo = iter(())
                self._take_back(pending, state)
        now = time.monotonic()
        if self.cancelled or now - self._last_look < self.poll_seconds:
            return
        self._last_look = now
        if now - self._last_beat >= heartbeat_seconds():
            # The run's own sign of life (the Jobs page reads it) while its chunks are answered.
            self._last_beat = now
            Run.objects.filter(pk=self.run.pk).update(heartbeat_at=timezone.now())
        status = Run.objects.filter(pk=self.run.pk).values_list("status", flat=True).first()
        if status not in ACTIVE:
            self.cancelled = True
            for state in self.opened:
                state.todo = iter(())
            self._take_back(pending, None)

    @staticmethod
    def _take_back(pending: dict[Future[_Answer], tuple[_Open, Item]], of: _Open | None) -> None:
        """Items no thread has started are not asked at all."""
        for future, (state, _item) in list(pending.items()):
            if (of is None or state is of) and future.cancel():
                del pending[future]
                state.outstanding -= 1

    def _request(self, item: Item) -> _Request:
        run = self.run
        # Baselines never look at images: do not read them from storage for nothing.
        wants_images = run.with_image and not isinstance(self.provider, BaselineProvider)
        labels: dict[str, str] | None = None
        options, answer = dict(item.lettered_options), item.answer
        task, task_error = None, ""
        try:
            if item.kind == ItemKind.LABEL:
                options, answer = choice_options(item, run.benchmark.label_sets or {})
                labels = options
            elif item.kind not in CHOICE_KINDS:
                task = task_request(item, with_image=run.with_image)
        except TaskInputError as error:
            task_error = str(error)
        return _Request(
            run_id=run.pk,
            family=run.benchmark.family,
            template=(run.endpoint.prompt_template or None) if run.endpoint else None,
            with_image=run.with_image,
            item=InferenceItem(
                key=f"{run.benchmark.name}:{item.source_index}",
                question=item.question,
                options=options,
                hint=item.hint,
                family=run.benchmark.family,
                category=item.category,
            ),
            images=[ii.image for ii in item.item_images.all()]
            if wants_images and task is None
            else [],
            answer=answer,
            labels=labels,
            task=task,
            task_error=task_error,
            logprobs=task is None and not isinstance(self.provider, BaselineProvider),
        )

    def _store(self, batch: list[tuple[_Open, Item, _Answer]]) -> None:
        """Store a batch of answers in one short transaction, with the counters.

        An item answered meanwhile by a worker that took its chunk over keeps that answer: the
        unique constraint skips ours."""
        if not batch:
            return
        for state, *_stored in batch:
            state.outstanding -= 1
        with transaction.atomic():
            stored = set(
                Prediction.objects.filter(
                    run_id=self.run.pk, item_id__in=[item.pk for _s, item, _a in batch]
                ).values_list("item_id", flat=True)
            )
            new = [(s, i, a) for s, i, a in batch if i.pk not in stored]
            Prediction.objects.bulk_create(
                [Prediction(run_id=self.run.pk, item=i, **_fields(i, a)) for _s, i, a in new],
                ignore_conflicts=True,
            )
            _count(self.run.pk, new)
            if any(a.completion and a.completion.logprobs_refused for _s, _i, a in new):
                Run.objects.filter(pk=self.run.pk, logprobs_refused=False).update(
                    logprobs_refused=True
                )
        if new and self.progress:
            self.progress(len(new))


def _count(run_id: int, new: list[tuple[_Open, Item, _Answer]]) -> None:
    """The run's and each chunk's counters, moved with the answers stored."""
    if not new:
        return
    failed = sum(1 for _s, _i, answer in new if answer.error)
    Run.objects.filter(pk=run_id).update(
        completed=F("completed") + len(new), failed=F("failed") + failed
    )
    by_chunk: dict[int, list[int]] = {}
    for state, _item, answer in new:
        counts = by_chunk.setdefault(state.claimed.lease.pk, [0, 0])
        counts[0] += 1
        counts[1] += bool(answer.error)
    for chunk_id, (created, errors) in by_chunk.items():
        RunChunk.objects.filter(pk=chunk_id).update(
            completed=F("completed") + created, failed=F("failed") + errors
        )


def _fields(item: Item, answer: _Answer) -> dict[str, Any]:
    completion = answer.completion
    return {
        "item_version": item.version,
        "raw_text": completion.text if completion else "",
        **(UNANSWERED if item.kind in CHOICE_KINDS else NOT_SCORED),
        **answer.fields,  # the readings of an answered choice; a kind's label, box, embedding
        "error": answer.error[:2000],
        "latency_ms": completion.latency_ms if completion else answer.latency_ms,
        "prompt_tokens": completion.prompt_tokens if completion else None,
        "completion_tokens": completion.completion_tokens if completion else None,
        "attempts": completion.attempts if completion else 1,
    }


def _run_start(run_id: int) -> bool:
    """The run is running from its first chunk on; False when it has ended meanwhile."""
    now = timezone.now()
    return bool(
        Run.objects.filter(pk=run_id, status__in=ACTIVE).update(
            status=RunStatus.RUNNING, started_at=Coalesce(F("started_at"), now), heartbeat_at=now
        )
    )


def _chunk_end(lease: Lease, cancelled: bool) -> str | None:
    """Its counters moved with every batch: only its status is left to write (None when the
    lease was lost meanwhile)."""
    status = RunStatus.CANCELLED if cancelled else RunStatus.DONE
    if lease.lost.is_set() or not lease_update(lease, status=status, finished_at=timezone.now()):
        return None
    return status
