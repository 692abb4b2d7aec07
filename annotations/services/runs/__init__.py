"""Model runs: create from filters, answer chunk by chunk with bounded concurrency, cancel, retry,
score, summarise.

- `create`: filters, endpoints, `run_create` / `run_cancel` / `run_retry`;
- `chunks`: cutting a run into the chunks that workers share, sending their tasks;
- `execute`: answering a chunk (`chunk_execute`) or a whole run in this process
  (`run_execute`), finishing and failing runs;
- `providers`: the baseline or OpenAI-compatible client that answers, and the judge;
- `scoring`: replies read as VLMEvalKit reads them (its judge step, our lenient reading
  beside), the run's summary with VLMEvalKit's own table, rescoring older runs.
"""

from __future__ import annotations

from annotations.selectors.runs import FILTER_FIELDS, SUMMARY_FIELDS
from annotations.services.runs.chunks import chunk_size
from annotations.services.runs.create import (
    BASELINES,
    MAX_CONCURRENCY,
    endpoint_ensure_baseline,
    endpoint_ensure_openai,
    run_cancel,
    run_create,
    run_filters_clean,
    run_retry,
)
from annotations.services.runs.execute import (
    chunk_execute,
    chunk_task,
    run_execute,
    run_fail,
    run_finish,
    run_resume,
    run_settle,
)
from annotations.services.runs.providers import judge_for, provider_for
from annotations.services.runs.scoring import (
    prediction_readings,
    prediction_score,
    run_rescore,
    run_summarize,
)

__all__ = [
    "BASELINES",
    "FILTER_FIELDS",
    "MAX_CONCURRENCY",
    "SUMMARY_FIELDS",
    "chunk_execute",
    "chunk_size",
    "chunk_task",
    "endpoint_ensure_baseline",
    "endpoint_ensure_openai",
    "judge_for",
    "prediction_readings",
    "prediction_score",
    "provider_for",
    "run_cancel",
    "run_create",
    "run_execute",
    "run_fail",
    "run_filters_clean",
    "run_finish",
    "run_rescore",
    "run_resume",
    "run_retry",
    "run_settle",
    "run_summarize",
]
