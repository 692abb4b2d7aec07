"""Model runs: create from filters, execute with bounded concurrency, cancel, score, summarise.

A run is executed by `run_execute`, which the Celery task, the `run_model` command and the
throughput bench all call. Its guarantees:

- Exactly one Prediction per (run, item): the database's unique constraint decides, and a
  prediction is only inserted through `get_or_create`, so a redelivered task (a worker killed
  mid-run, acks_late) skips every item already stored and never duplicates one. A request that
  was in flight at the moment of the kill is sent again by the next worker; its answer is
  stored once.
- Network calls run in a thread pool of `run.concurrency`; every database write happens on the
  calling thread, so the pool never holds a connection and SQLite sees a single writer.
- Cancellation is a conditional UPDATE of the status; the executor polls it, stops submitting,
  stores the answers already in flight and leaves the status as CANCELLED.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from annotations.inference import (
    BaselineProvider,
    Completion,
    FirstOptionBaseline,
    FrequentAnswerBaseline,
    InferenceItem,
    OpenAICompatibleProvider,
    ProviderError,
    RandomBaseline,
    predict,
)
from annotations.models import (
    CURATED_STATUSES,
    TAXONOMY_FIELDS,
    Benchmark,
    EndpointKind,
    Family,
    Item,
    ModelEndpoint,
    Prediction,
    Run,
    RunKind,
    RunStatus,
)
from annotations.scoring import breakdown, extract_mcq, extract_medqdeg, is_refusal
from annotations.scoring.judge import build_judge_prompt, read_judge_reply
from annotations.services import secrets
from annotations.services.errors import DomainError
from annotations.services.images import image_bytes
from annotations.services.triage import triage_schedule

log = logging.getLogger(__name__)

BASELINES = ("random", "first", "frequent")
# Every field a run can be filtered on and its accuracy broken down by.
SUMMARY_FIELDS = (*TAXONOMY_FIELDS, "degradation_type", "degradation_severity")
FILTER_FIELDS = ("status", *SUMMARY_FIELDS)
MAX_CONCURRENCY = 64
_ACTIVE = (RunStatus.QUEUED, RunStatus.RUNNING)
_BATCH = 64

ProgressCallback = Callable[[int], None]


# --- creating ------------------------------------------------------------------------------


def run_filters_clean(filters: dict[str, Any] | None) -> dict[str, Any]:
    """Validated filters: known fields only, values as non-empty lists of strings, a limit."""
    cleaned: dict[str, Any] = {}
    for key, value in (filters or {}).items():
        if key == "limit":
            if value in (None, ""):
                continue
            try:
                limit = int(value)
            except (TypeError, ValueError):
                raise DomainError(_("The limit must be a whole number.")) from None
            if limit < 1:
                raise DomainError(_("The limit must be at least 1."))
            cleaned["limit"] = limit
            continue
        if key not in FILTER_FIELDS:
            raise DomainError(_("Unknown filter field: %(field)s.") % {"field": key})
        values = value if isinstance(value, list | tuple) else [value]
        values = [str(v) for v in values if v not in (None, "")]
        if values:
            cleaned[key] = values
    return cleaned


def run_items_queryset(*, benchmark: Benchmark, filters: dict[str, Any]) -> QuerySet[Item]:
    """The items a run with these (clean) filters covers, in index order, limit applied."""
    items = Item.objects.filter(benchmark=benchmark)
    for key, values in filters.items():
        if key == "limit":
            continue
        if key == "status":
            # "curated" is a shorthand for the statuses that go into releases.
            expanded = {s for v in values for s in (CURATED_STATUSES if v == "curated" else (v,))}
            items = items.filter(status__in=expanded)
        else:
            items = items.filter(**{f"{key}__in": values})
    items = items.order_by("source_index")
    limit = filters.get("limit")
    return items[:limit] if limit else items


def endpoint_ensure_baseline(*, baseline: str) -> ModelEndpoint:
    """The built-in baseline's endpoint row (created on first use)."""
    if baseline not in BASELINES:
        raise DomainError(_("Unknown baseline: %(name)s.") % {"name": baseline})
    endpoint, _created = ModelEndpoint.objects.get_or_create(
        name=f"baseline-{baseline}", defaults={"kind": EndpointKind.BASELINE, "baseline": baseline}
    )
    return endpoint


def endpoint_ensure_openai(
    *,
    name: str,
    base_url: str,
    model: str,
    api_key_env: str = "",
    params: dict | None = None,
    api_key: str = "",
) -> ModelEndpoint:
    """An OpenAI-compatible endpoint by name, updated to the given URL, model and key (a
    prefixed variable's name, or a typed key stored encrypted; see services.secrets)."""
    defaults = {
        "kind": EndpointKind.OPENAI,
        "base_url": secrets.base_url_check(base_url),
        "model": model,
        "api_key_env": secrets.key_env_check(api_key_env),
        "params": params or {},
    }
    if api_key or api_key_env:
        defaults["api_key_encrypted"] = secrets.key_encrypt(api_key)
    endpoint, _created = ModelEndpoint.objects.update_or_create(name=name, defaults=defaults)
    return endpoint


@transaction.atomic
def run_create(
    *,
    benchmark: Benchmark,
    endpoint: ModelEndpoint,
    filters: dict[str, Any] | None = None,
    with_image: bool = True,
    concurrency: int = 4,
    seed: int = 0,
    label: str = "",
    created_by: Any = None,
    enqueue: bool = True,
    judge: ModelEndpoint | None = None,
) -> Run:
    """Create a run over the items matching `filters` and (after commit) queue its execution;
    `judge`, an OpenAI-compatible endpoint, reads the answers the rules cannot."""
    if not 1 <= concurrency <= MAX_CONCURRENCY:
        raise DomainError(
            _("Concurrency must be between 1 and %(max)d.") % {"max": MAX_CONCURRENCY}
        )
    if endpoint.kind == EndpointKind.OPENAI and not (endpoint.base_url and endpoint.model):
        raise DomainError(_("This endpoint has no base URL or model name."))
    if judge is not None and not (
        judge.kind == EndpointKind.OPENAI and judge.base_url and judge.model
    ):
        raise DomainError(_("The judge must be a model endpoint with a base URL and a model name."))
    cleaned = run_filters_clean(filters)
    total = run_items_queryset(benchmark=benchmark, filters=cleaned).count()
    if total == 0:
        raise DomainError(_("No item matches these filters."))
    if not label:
        label = endpoint.name if with_image else _("%(name)s (no image)") % {"name": endpoint.name}
    run = Run.objects.create(
        benchmark=benchmark,
        endpoint=endpoint,
        kind=RunKind.BASELINE if endpoint.kind == EndpointKind.BASELINE else RunKind.MODEL,
        judge=judge,
        label=label,
        filters=cleaned,
        with_image=with_image,
        concurrency=concurrency,
        seed=seed,
        total=total,
        created_by=created_by,
    )
    if enqueue:
        from annotations.tasks.runs import run_execute as run_execute_task  # import cycle

        transaction.on_commit(lambda: run_execute_task.delay(run.pk))
    return run


def run_cancel(*, run: Run) -> bool:
    """Cancel a queued or running run; False when it had already ended (nothing changes).

    A human baseline ended early keeps its clinician's answers, scored now as a partial run (a
    model's run is scored by its worker, which sees the cancellation)."""
    changed = Run.objects.filter(pk=run.pk, status__in=_ACTIVE).update(
        status=RunStatus.CANCELLED, finished_at=timezone.now()
    )
    if changed and run.kind == RunKind.HUMAN:
        run_finish(run_id=run.pk)
    run.refresh_from_db()
    return bool(changed)


_ENDED = (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)


@transaction.atomic
def run_retry(*, run: Run, enqueue: bool = True) -> int:
    """Send an ended run back to the queue for the items it has no good answer for: those
    whose request failed after every retry (their error rows are cleared), and those a failed or
    cancelled run never reached. Good answers are kept as they are. Returns the number of
    failed answers cleared."""
    if run.kind == RunKind.HUMAN:
        raise DomainError(_("A human baseline is answered by its clinician; it is not retried."))
    total = run_items_queryset(benchmark=run.benchmark, filters=run.filters).count()
    predictions = Prediction.objects.filter(run_id=run.pk)
    failed = predictions.exclude(error="")
    if not failed.exists() and predictions.count() >= total:
        raise DomainError(_("Every item of this run has an answer: there is nothing to retry."))
    reopened = Run.objects.filter(pk=run.pk, status__in=_ENDED).update(
        status=RunStatus.QUEUED, error="", finished_at=None, total=total
    )
    if not reopened:
        raise DomainError(_("Only an ended run can be retried."), code="not_ended")
    cleared, _by_model = failed.delete()
    # Counts and scores of what is kept, until the run finishes again.
    Run.objects.filter(pk=run.pk).update(
        completed=predictions.count(), failed=0, summary=run_summarize(run=run)
    )
    if enqueue:
        from annotations.tasks.runs import run_execute as run_execute_task  # import cycle

        transaction.on_commit(lambda: run_execute_task.delay(run.pk))
    run.refresh_from_db()
    return cleared


# --- scoring -------------------------------------------------------------------------------


def prediction_score(*, item: Item, family: str, text: str) -> tuple[str, bool]:
    """(extracted letter or "", hit) for an answer, with the family's own extraction rules."""
    extracted = answer_letter(options=dict(item.lettered_options), family=family, text=text)
    return extracted, bool(extracted) and extracted == item.answer


def answer_letter(*, options: dict[str, str], family: str, text: str) -> str:
    """The option letter an answer gives by the family's rules, or ''."""
    if family == Family.MEDQDEG:
        letters = "".join(letter for letter in options if letter in "ABCDE")
        extracted = extract_medqdeg(text) if letters else None
    else:
        extracted = extract_mcq(text, options)
    return extracted or ""


def run_summarize(*, run: Run) -> dict[str, Any]:
    """Accuracy overall and by every summary field present, each with its Wilson 95% interval."""
    rows = Prediction.objects.filter(run=run).values(
        "hit",
        "error",
        "raw_text",
        "extracted",
        "judged_by_llm",
        *(f"item__{f}" for f in SUMMARY_FIELDS),
    )
    records: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for row in rows.iterator(chunk_size=2000):
        record = {field: row[f"item__{field}"] for field in SUMMARY_FIELDS}
        record["hit"] = row["hit"]
        records.append(record)
        counts["failed"] += bool(row["error"])
        counts["unmatched"] += not row["error"] and not row["extracted"]
        counts["judged"] += bool(row["judged_by_llm"])
        counts["refusals"] += is_refusal(row["raw_text"])
    result = breakdown(records, SUMMARY_FIELDS)
    by = {
        field: {str(value): _score_json(score) for value, score in scores.items()}
        for field, scores in result["by"].items()
        if scores
    }
    return {"overall": _score_json(result["overall"]), "by": by, **counts}


def _score_json(score: Any) -> dict[str, Any]:
    accuracy = score.accuracy if score.n else None
    return {
        "n": score.n,
        "hits": score.hits,
        "accuracy": accuracy,
        "low": score.low,
        "high": score.high,
    }


# --- executing -----------------------------------------------------------------------------


@dataclass
class _Outcome:
    completion: Completion | None
    error: str = ""
    latency_ms: float | None = None
    judged: str | None = None  # the judge's letter ('' for none); None when not asked


def provider_for(run: Run) -> Any:
    """The provider (baseline or OpenAI-compatible client) that answers for this run."""
    endpoint = run.endpoint
    if endpoint is None:
        raise DomainError(_("This run has no endpoint to execute."))
    if endpoint.kind == EndpointKind.BASELINE:
        return _baseline_for(run, endpoint.baseline)
    return _chat_provider(endpoint)


def judge_for(run: Run) -> Any:
    """The OpenAI-compatible client of the run's LLM judge, or None without one."""
    return _chat_provider(run.judge) if run.judge_id else None


def _chat_provider(endpoint: ModelEndpoint) -> Any:
    api_key = secrets.endpoint_api_key(endpoint)
    params = endpoint.params or {}
    settings_used = tuple(sorted((key, params[key]) for key in _CLIENT_PARAMS if key in params))
    return _openai_provider(endpoint.base_url, endpoint.model, api_key, settings_used)


_CLIENT_PARAMS = (
    "temperature",
    "max_tokens",
    "timeout",
    "max_retries",
    "backoff_base",
    "backoff_max",
)
_PROVIDERS: dict[tuple, OpenAICompatibleProvider] = {}
_PROVIDERS_LOCK = threading.Lock()
_PROVIDERS_MAX = 8


def _openai_provider(
    base_url: str, model: str, api_key: str | None, params: tuple
) -> OpenAICompatibleProvider:
    """One client per endpoint configuration and process, reused by every run.

    Building an `openai` client (TLS context, connection pool) costs a few hundred
    milliseconds and its first requests open new connections; a worker that keeps it runs
    back-to-back runs at full speed. Providers are thread-safe.
    """
    key = (base_url, model, api_key, params)
    with _PROVIDERS_LOCK:
        provider = _PROVIDERS.get(key)
        if provider is None:
            if len(_PROVIDERS) >= _PROVIDERS_MAX:
                _PROVIDERS.pop(next(iter(_PROVIDERS))).close()
            provider = OpenAICompatibleProvider(base_url, model, api_key, **dict(params))
            _PROVIDERS[key] = provider
        return provider


def _baseline_for(run: Run, name: str) -> BaselineProvider:
    if name == "random":
        return RandomBaseline(seed=run.seed)
    if name == "first":
        return FirstOptionBaseline()
    if name == "frequent":
        items = run_items_queryset(benchmark=run.benchmark, filters=run.filters)
        counts: dict[str, Counter[str]] = {}
        for category, answer in items.values_list("category", "answer"):
            counts.setdefault(category, Counter())[answer] += 1
        return FrequentAnswerBaseline(counts)
    raise DomainError(_("Unknown baseline: %(name)s.") % {"name": name})


def _run_claim(run_id: int) -> bool:
    # RUNNING is claimable too: that is a redelivered task whose worker died mid-run.
    return bool(
        Run.objects.filter(pk=run_id, status__in=_ACTIVE).update(
            status=RunStatus.RUNNING, started_at=Coalesce(F("started_at"), timezone.now())
        )
    )


def run_execute(
    *,
    run_id: int,
    provider: Any = None,
    progress: ProgressCallback | None = None,
    poll_seconds: float = 0.5,
) -> Run | None:
    """Answer every item of the run not answered yet, then score it. Idempotent.

    Returns None when the run was not claimable (already done, failed or cancelled).
    `progress(n)` is called with the number of predictions stored by each step.
    """
    if not _run_claim(run_id):
        return None
    run = Run.objects.select_related("benchmark", "endpoint", "judge").get(pk=run_id)
    try:
        provider = provider or provider_for(run)
        _Executor(run, provider, progress, poll_seconds, judge_for(run)).execute()
    except Exception as error:
        run_fail(run_id=run_id, error=str(error) or error.__class__.__name__)
        raise
    return run_finish(run_id=run_id)


def run_fail(*, run_id: int, error: str) -> None:
    """Record a run that could not go on (its predictions so far are kept)."""
    Run.objects.filter(pk=run_id, status__in=_ACTIVE).update(
        status=RunStatus.FAILED, error=error[:2000], finished_at=timezone.now()
    )


def run_finish(*, run_id: int) -> Run:
    """Recount and score the run; a running run becomes DONE, a cancelled one stays cancelled."""
    run = Run.objects.get(pk=run_id)
    predictions = Prediction.objects.filter(run_id=run_id)
    completed = predictions.count()
    failed = predictions.exclude(error="").count()
    summary = run_summarize(run=run)
    Run.objects.filter(pk=run_id).update(completed=completed, failed=failed, summary=summary)
    finished = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING).update(
        status=RunStatus.DONE, finished_at=timezone.now()
    )
    if finished:
        # New answers change the model-consensus evidence: recompute the benchmark's triage.
        triage_schedule(benchmark_id=run.benchmark_id)
    run.refresh_from_db()
    return run


def _pending_item_ids(run: Run) -> list[int]:
    items = run_items_queryset(benchmark=run.benchmark, filters=run.filters)
    done = set(Prediction.objects.filter(run=run).values_list("item_id", flat=True))
    return [pk for pk in items.values_list("pk", flat=True) if pk not in done]


def _items_in_batches(ids: list[int]) -> Iterator[Item]:
    for start in range(0, len(ids), _BATCH):
        batch = ids[start : start + _BATCH]
        loaded = Item.objects.prefetch_related("item_images__image").in_bulk(batch)
        yield from (loaded[pk] for pk in batch if pk in loaded)


def _answer(
    provider: Any, item: InferenceItem, image_names: list[Any], run: Run, judge: Any = None
) -> _Outcome:
    """Runs in a pool thread: read the images from storage and ask the provider (then the judge,
    for an answer the rules cannot read). No ORM here."""
    started = time.perf_counter()
    try:
        item.images = [image_bytes(image) for image in image_names]
        completion = predict(
            provider,
            item,
            family=run.benchmark.family,
            template=(run.endpoint.prompt_template or None) if run.endpoint else None,
            with_image=run.with_image,
        )
        return _Outcome(completion, judged=_judged(judge, item, completion.text, run))
    except ProviderError as error:
        return _Outcome(None, str(error), (time.perf_counter() - started) * 1000)
    except Exception as error:  # a bad image file must fail its item, not the whole run
        log.exception("run %s: item %s failed", run.pk, item.key)
        return _Outcome(None, f"{error.__class__.__name__}: {error}")


def _judged(judge: Any, item: InferenceItem, text: str, run: Run) -> str | None:
    """The judge's letter for an answer the rules cannot read; None when the rules can, when
    there is no judge, or when the judge could not be reached (the answer stays unmatched)."""
    family = run.benchmark.family
    if (
        judge is None
        or not text.strip()
        or answer_letter(options=item.options, family=family, text=text)
    ):
        return None
    prompt = build_judge_prompt(question=item.question, options=item.options, reply=text)
    try:
        reply = judge.complete([{"role": "user", "content": prompt}])
    except ProviderError as error:
        log.warning("run %s: item %s: the judge failed: %s", run.pk, item.key, error)
        return None
    opt = read_judge_reply(reply.text, options=item.options)
    return "" if opt == "Z" else opt


@dataclass
class _Job:
    item: Item
    inference_item: InferenceItem
    images: list[Any]


class _Executor:
    """Keeps `run.concurrency` requests in flight and stores the answers as they arrive.

    Each pool thread takes the next prepared item from `todo` as soon as it is free, so a slot
    never waits for the database; this thread prepares items (ORM reads) and stores answers
    (ORM writes) in batches, one transaction per batch.
    """

    def __init__(
        self,
        run: Run,
        provider: Any,
        progress: ProgressCallback | None,
        poll_seconds: float,
        judge: Any = None,
    ) -> None:
        self.run = run
        self.provider = provider
        self.judge = judge
        self.progress = progress
        self.poll_seconds = poll_seconds
        self.cancelled = False
        self._last_poll = time.monotonic()
        self.limit = max(1, run.concurrency)
        self.todo: queue.Queue[_Job | None] = queue.Queue(maxsize=2 * self.limit)
        self.done: queue.Queue[tuple[Item, _Outcome]] = queue.Queue()

    def execute(self) -> None:
        threads = [
            threading.Thread(target=self._work, name=f"run{self.run.pk}-{n}", daemon=True)
            for n in range(self.limit)
        ]
        for thread in threads:
            thread.start()
        try:
            self._loop(_items_in_batches(_pending_item_ids(self.run)))
        finally:
            self._drain_todo()
            for _thread in threads:
                self.todo.put(None)
            for thread in threads:
                thread.join()

    def _loop(self, stream: Iterator[Item]) -> None:
        outstanding = 0  # handed to the pool, not stored yet
        exhausted = False
        while True:
            while not exhausted and not self.cancelled and not self.todo.full():
                item = next(stream, None)
                if item is None:
                    exhausted = True
                else:
                    self.todo.put(self._prepare(item))
                    outstanding += 1
            if outstanding == 0:
                return
            outstanding -= self._store_ready()
            self._poll_cancel()
            if self.cancelled:
                outstanding -= self._drain_todo()

    def _work(self) -> None:
        while (job := self.todo.get()) is not None:
            self.done.put(
                (
                    job.item,
                    _answer(self.provider, job.inference_item, job.images, self.run, self.judge),
                )
            )

    def _drain_todo(self) -> int:
        """Take back the items no thread has started (on cancel); how many were taken."""
        taken = 0
        while True:
            try:
                job = self.todo.get_nowait()
            except queue.Empty:
                return taken
            if job is None:  # only the shutdown sentinels; keep them for the threads
                self.todo.put(None)
                return taken
            taken += 1

    def _prepare(self, item: Item) -> _Job:
        # Baselines never look at images: do not read them from storage for nothing.
        wants_images = self.run.with_image and not isinstance(self.provider, BaselineProvider)
        images = [ii.image for ii in item.item_images.all()] if wants_images else []
        inference_item = InferenceItem(
            key=f"{self.run.benchmark.name}:{item.source_index}",
            question=item.question,
            options=dict(item.lettered_options),
            hint=item.hint,
            family=self.run.benchmark.family,
            category=item.category,
        )
        return _Job(item, inference_item, images)

    def _store_ready(self) -> int:
        """Wait briefly for answers, store every one ready in one transaction; how many."""
        try:
            batch = [self.done.get(timeout=self.poll_seconds)]
        except queue.Empty:
            return 0
        while len(batch) < _BATCH:
            try:
                batch.append(self.done.get_nowait())
            except queue.Empty:
                break
        created = completed = failed = 0
        with transaction.atomic():
            for item, outcome in batch:
                _prediction, is_new = Prediction.objects.get_or_create(
                    run=self.run, item=item, defaults=self._fields(item, outcome)
                )
                created += is_new
                failed += is_new and bool(outcome.error)
            completed = created
            if created:
                Run.objects.filter(pk=self.run.pk).update(
                    completed=F("completed") + completed, failed=F("failed") + failed
                )
        if created and self.progress:
            self.progress(created)
        return len(batch)

    def _fields(self, item: Item, outcome: _Outcome) -> dict[str, Any]:
        completion = outcome.completion
        text = completion.text if completion else ""
        extracted, hit = prediction_score(item=item, family=self.run.benchmark.family, text=text)
        judged = outcome.judged is not None
        if judged:  # the rules read nothing; the judge's reading counts, recorded as such
            extracted, hit = outcome.judged, bool(outcome.judged) and outcome.judged == item.answer
        return {
            "item_version": item.version,
            "raw_text": text,
            "extracted": extracted,
            "hit": hit,
            "judged_by_llm": judged,
            "error": outcome.error[:2000],
            "latency_ms": completion.latency_ms if completion else outcome.latency_ms,
            "prompt_tokens": completion.prompt_tokens if completion else None,
            "completion_tokens": completion.completion_tokens if completion else None,
            "attempts": completion.attempts if completion else 1,
        }

    def _poll_cancel(self) -> None:
        now = time.monotonic()
        if now - self._last_poll < self.poll_seconds:
            return
        self._last_poll = now
        status = Run.objects.filter(pk=self.run.pk).values_list("status", flat=True).first()
        self.cancelled = status != RunStatus.RUNNING


__all__ = [
    "BASELINES",
    "FILTER_FIELDS",
    "SUMMARY_FIELDS",
    "endpoint_ensure_baseline",
    "endpoint_ensure_openai",
    "judge_for",
    "prediction_score",
    "provider_for",
    "run_cancel",
    "run_create",
    "run_execute",
    "run_fail",
    "run_filters_clean",
    "run_finish",
    "run_items_queryset",
    "run_summarize",
]
