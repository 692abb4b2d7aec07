"""Starting, cancelling and retrying runs, and the endpoints they ask."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from annotations.models import (
    Benchmark,
    EndpointKind,
    ModelEndpoint,
    Prediction,
    Run,
    RunChunk,
    RunKind,
    RunStatus,
)
from annotations.scoring import VLMEVAL_COMMIT
from annotations.selectors.runs import FILTER_FIELDS, run_items
from annotations.services import secrets
from annotations.services.errors import DomainError
from annotations.services.runs.chunks import chunks_send, run_chunks_plan
from annotations.services.runs.execute import ACTIVE, ENDED, run_finish
from annotations.services.runs.scoring import run_summarize

if TYPE_CHECKING:
    from django.contrib.auth.models import User

BASELINES = ("random", "first", "frequent")
MAX_CONCURRENCY = 64


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
    params: dict[str, Any] | None = None,
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


def _check_endpoints(
    endpoint: ModelEndpoint, judge: ModelEndpoint | None, concurrency: int
) -> None:
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
    created_by: User | None = None,
    enqueue: bool = True,
    judge: ModelEndpoint | None = None,
    lenient: bool = False,
) -> Run:
    """Create a run over the items matching `filters`, cut it in chunks and (after commit) send
    one task per chunk. `judge`, an OpenAI-compatible endpoint, takes VLMEvalKit's judge step
    for the replies its exact matching cannot read; `lenient` shows our lenient score beside
    VLMEvalKit's."""
    _check_endpoints(endpoint, judge, concurrency)
    cleaned = run_filters_clean(filters)
    total = run_items(benchmark=benchmark, filters=cleaned).count()
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
        lenient=lenient,
        vlmeval_commit=VLMEVAL_COMMIT,
        concurrency=concurrency,
        seed=seed,
        total=total,
        created_by=created_by,
    )
    run_chunks_plan(run=run, total=total)
    if enqueue:
        chunks_send(run_id=run.pk)
    return run


@transaction.atomic
def run_cancel(*, run: Run) -> bool:
    """Cancel a queued or running run; False when it had already ended (nothing changes).

    Its chunks are cancelled with it and it is scored on what it has. A chunk being answered
    stops at its next look at the run, stores the answers in flight and scores the run again. A
    human baseline ended early keeps its clinician's answers, scored as a partial run."""
    changed = Run.objects.filter(pk=run.pk, status__in=ACTIVE).update(
        status=RunStatus.CANCELLED, finished_at=timezone.now()
    )
    if changed:
        RunChunk.objects.filter(run_id=run.pk, status__in=ACTIVE).update(
            status=RunStatus.CANCELLED, finished_at=timezone.now()
        )
        run_finish(run_id=run.pk)
    run.refresh_from_db()
    return bool(changed)


@transaction.atomic
def run_retry(*, run: Run, enqueue: bool = True) -> int:
    """Send an ended run back to the queue for the items it has no good answer for: those
    whose request failed after every retry (their error rows are cleared), and those a failed or
    cancelled run never reached. Good answers are kept as they are. Returns the number of
    failed answers cleared."""
    if run.kind == RunKind.HUMAN:
        raise DomainError(_("A human baseline is answered by its clinician; it is not retried."))
    total = run_items(benchmark=run.benchmark, filters=run.filters).count()
    predictions = Prediction.objects.filter(run_id=run.pk)
    failed = predictions.exclude(error="")
    if not failed.exists() and predictions.count() >= total:
        raise DomainError(_("Every item of this run has an answer: there is nothing to retry."))
    reopened = Run.objects.filter(pk=run.pk, status__in=ENDED).update(
        status=RunStatus.QUEUED, error="", finished_at=None, total=total
    )
    if not reopened:
        raise DomainError(_("Only an ended run can be retried."), code="not_ended")
    cleared, _by_model = failed.delete()
    run_chunks_plan(run=run, total=total)  # a run from before chunks has none yet
    # A chunk with an error or one never finished is answered again, for its missing items only.
    RunChunk.objects.filter(run_id=run.pk).filter(
        ~Q(status=RunStatus.DONE) | Q(failed__gt=0)
    ).update(status=RunStatus.QUEUED, error="", failed=0, finished_at=None)
    # Counts and scores of what is kept, until the run finishes again.
    Run.objects.filter(pk=run.pk).update(
        completed=predictions.count(), failed=0, summary=run_summarize(run=run)
    )
    if enqueue:
        chunks_send(run_id=run.pk)
    run.refresh_from_db()
    return cleared
