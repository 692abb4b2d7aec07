"""Who answers a run: a built-in baseline or an OpenAI-compatible client (and its judge)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from django.db.models import Count
from django.utils.translation import gettext as _

from annotations.inference import (
    BaselineProvider,
    ChatProvider,
    FirstOptionBaseline,
    FrequentAnswerBaseline,
    OpenAICompatibleProvider,
    RandomBaseline,
)
from annotations.inference.task_prompts import label_options, letter_of
from annotations.models import EndpointKind, ItemKind, ModelEndpoint, Run
from annotations.models.item import LETTERS
from annotations.selectors.runs import run_items
from annotations.services import secrets
from annotations.services.errors import DomainError

Provider = ChatProvider | BaselineProvider

_CLIENT_PARAMS = (
    "temperature",
    "max_tokens",
    "timeout",
    "max_retries",
    "backoff_base",
    "backoff_max",
)
_PROVIDERS: dict[tuple[Any, ...], OpenAICompatibleProvider] = {}
_EMBEDDING_PARAMS = ("timeout", "max_retries", "backoff_base", "backoff_max")
_EMBEDDERS: dict[tuple[Any, ...], Any] = {}
_PROVIDERS_LOCK = threading.Lock()
_PROVIDERS_MAX = 8


def provider_for(run: Run) -> Provider:
    """The provider (baseline or OpenAI-compatible client) that answers for this run."""
    endpoint = run.endpoint
    if endpoint is None:
        raise DomainError(_("This run has no endpoint to execute."))
    if endpoint.kind == EndpointKind.BASELINE:
        return _baseline_for(run, endpoint.baseline)
    return _chat_provider(endpoint)


def embedder_for(run: Run) -> Any:
    """The OpenAI-compatible embeddings client of the run's endpoint (its `embedding_model`
    parameter, else its model), or None for a baseline. One per configuration and process."""
    endpoint = run.endpoint
    if endpoint is None or endpoint.kind != EndpointKind.OPENAI:
        return None
    params = endpoint.params or {}
    model = params.get("embedding_model") or endpoint.model
    api_key = secrets.endpoint_api_key(endpoint)
    settings_used = tuple(sorted((key, params[key]) for key in _EMBEDDING_PARAMS if key in params))
    key = ("embeddings", endpoint.base_url, model, api_key, settings_used)
    with _PROVIDERS_LOCK:
        embedder = _EMBEDDERS.get(key)
        if embedder is None:
            # `openai` is imported by the embeddings module: only runs with retrieval pay it.
            from annotations.inference.embeddings import OpenAIEmbeddingsProvider

            if len(_EMBEDDERS) >= _PROVIDERS_MAX:
                _EMBEDDERS.pop(next(iter(_EMBEDDERS))).close()
            embedder = OpenAIEmbeddingsProvider(
                endpoint.base_url, model, api_key, **dict(settings_used)
            )
            _EMBEDDERS[key] = embedder
        return embedder


def judge_for(run: Run) -> ChatProvider | None:
    """The OpenAI-compatible client of the run's LLM judge, or None without one."""
    return _chat_provider(run.judge) if run.judge is not None else None


def _chat_provider(endpoint: ModelEndpoint) -> OpenAICompatibleProvider:
    api_key = secrets.endpoint_api_key(endpoint)
    params = endpoint.params or {}
    settings_used = tuple(sorted((key, params[key]) for key in _CLIENT_PARAMS if key in params))
    return _openai_provider(endpoint.base_url, endpoint.model, api_key, settings_used)


def _openai_provider(
    base_url: str, model: str, api_key: str | None, params: tuple[tuple[str, Any], ...]
) -> OpenAICompatibleProvider:
    """One client per endpoint configuration and process, reused by every run and chunk.

    Building an `openai` client (TLS context, connection pool) costs a few hundred
    milliseconds and its first requests open new connections; a worker that keeps it answers
    chunk after chunk at full speed. Providers are thread-safe.
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
        return FrequentAnswerBaseline(_answer_counts(run))
    raise DomainError(_("Unknown baseline: %(name)s.") % {"name": name})


def _answer_counts(run: Run) -> dict[str, Counter[str]]:
    """Gold letters counted per category over the run's items (by the database: every chunk of
    a large run builds its baseline again). A classification item's gold is a label: it counts
    as the letter its label is asked with (`services.runs.tasks.choice_options`)."""
    items = run_items(benchmark=run.benchmark, filters=run.filters)
    columns = ("category", "answer", "kind", "target__field")
    if run.filters.get("limit"):  # a sliced queryset cannot be grouped
        rows = Counter(items.values_list(*columns))
    else:
        grouped = items.order_by().values_list(*columns).annotate(n=Count("pk"))
        rows = Counter({tuple(row[:-1]): row[-1] for row in grouped})
    label_sets = run.benchmark.label_sets or {}
    counts: dict[str, Counter[str]] = {}
    for (category, answer, kind, field), n in rows.items():
        if kind == ItemKind.LABEL:
            labels = label_sets.get(field or "label") or []
            # Sets past 26 labels are refused on import; here such an item just counts as "".
            fits = 0 < len(labels) <= len(LETTERS)
            answer = letter_of(label_options(labels), answer) if fits else ""
        counts.setdefault(category, Counter())[answer] += n
    return counts
