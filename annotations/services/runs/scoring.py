"""Scoring glue: a reply read as VLMEvalKit reads it (with its judge step when the run has a
judge) and by our lenient rules; a run's summary with VLMEvalKit's own table."""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from annotations.inference import ChatProvider, ProviderError
from annotations.models import Family, Item, ItemKind, Prediction, Run, RunKind, RunStatus
from annotations.scoring import (
    JUDGE_ATTEMPTS,
    VLMEVAL_COMMIT,
    JudgeVerdict,
    Reading,
    Score,
    breakdown,
    build_judge_prompt,
    is_refusal,
    judge_verdict,
    medqdeg_score_table,
    read_reply,
    vlmeval_acc_table,
)
from annotations.scoring.calibration import confidence_of
from annotations.selectors.runs import SUMMARY_FIELDS
from annotations.services.errors import DomainError
from annotations.services.runs.calibration import run_calibration_summary
from annotations.services.runs.task_scores import run_tasks_summary
from annotations.services.runs.tasks import CHOICE_KINDS, TaskInputError, choice_options

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Scored:
    """A reply's readings, as a Prediction stores them."""

    reading: Reading
    verdict: JudgeVerdict | None = None  # the judge step, when it ran

    def fields(self, *, answer: str) -> dict[str, Any]:
        reading, verdict = self.reading, self.verdict
        return {
            "extracted": verdict.letter if verdict else reading.letter,
            "hit": verdict.opt == answer if verdict else reading.hit,
            "vlmeval_letter": reading.letter,
            "judged_by_llm": verdict is not None,
            "judge_letter": verdict.letter if verdict else "",
            "judge_drawn": verdict.fallback if verdict else False,
            "lenient_letter": reading.lenient_letter,
            "lenient_hit": reading.lenient_hit,
        }


UNANSWERED: dict[str, Any] = {
    "extracted": "",
    "hit": False,
    "vlmeval_letter": "",
    "judged_by_llm": False,
    "judge_letter": "",
    "judge_drawn": False,
    "lenient_letter": "",
    "lenient_hit": False,
}
# Reports, boxes and retrieval pairs have no letter to read: their scores are the task's own.
NOT_SCORED: dict[str, Any] = {**UNANSWERED, "hit": None, "lenient_hit": None}


def reply_read(*, family: str, reply: str, options: Mapping[str, str], answer: str) -> Reading:
    """VLMEvalKit's reading of a reply (and the lenient one beside it)."""
    return read_reply(family=family, reply=reply, options=options, answer=answer)


def prediction_readings(*, item: Item, family: str, text: str) -> dict[str, Any]:
    """A Prediction's reading fields for a reply to `item`, with no judge."""
    reading = reply_read(
        family=family, reply=text, options=dict(item.lettered_options), answer=item.answer
    )
    return Scored(reading).fields(answer=item.answer)


def prediction_score(*, item: Item, family: str, text: str) -> tuple[str, bool]:
    """(VLMEvalKit's letter or "", hit) for an answer to `item`."""
    fields = prediction_readings(item=item, family=family, text=text)
    return fields["extracted"], fields["hit"]


def reply_score(
    *,
    family: str,
    reply: str,
    question: str,
    options: Mapping[str, str],
    answer: str,
    judge: ChatProvider | None,
    seed: str,
) -> Scored:
    """Read a reply; where VLMEvalKit's exact matching read nothing and there is a judge, take
    VLMEvalKit's judge step (up to three calls, a seeded draw when all fail). Runs in a pool
    thread: no ORM."""
    reading = reply_read(family=family, reply=reply, options=options, answer=answer)
    if judge is None or not reading.judge_applies or family == Family.MEDQDEG:
        return Scored(reading)
    prompt = build_judge_prompt(question=question, options=options, reply=reply)
    replies: list[str | None] = []
    verdict = None
    while verdict is None and len(replies) < JUDGE_ATTEMPTS:
        try:
            replies.append(judge.complete([{"role": "user", "content": prompt}]).text)
        except ProviderError as error:
            log.warning("judge call failed (%s): %s", seed, error)
            replies.append(None)
        verdict = judge_verdict(judge_replies=replies, options=options, seed=seed)
    return Scored(reading, verdict)


def run_summarize(*, run: Run) -> dict[str, Any]:
    """Accuracy overall and by every summary field present, each with its Wilson 95% interval;
    the lenient score the same way; VLMEvalKit's own table (its `report_acc`, or MedQ-DEG's
    score dict) with the commit whose rules read the answers."""
    # VLMEvalKit's score is over the multiple-choice items (VQA and classification): reports,
    # boxes and retrieval pairs are scored per task (`tasks`).
    rows = Prediction.objects.filter(run=run, item__kind__in=CHOICE_KINDS).values(
        "hit",
        "lenient_hit",
        "error",
        "raw_text",
        "extracted",
        "vlmeval_letter",
        "lenient_letter",
        "judged_by_llm",
        "judge_drawn",
        *(f"item__{f}" for f in SUMMARY_FIELDS),
    )
    records: list[dict[str, Any]] = []
    lenient: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for row in rows.iterator(chunk_size=2000):
        record = {field: row[f"item__{field}"] for field in SUMMARY_FIELDS}
        records.append({**record, "hit": row["hit"]})
        lenient.append({**record, "hit": bool(row["lenient_hit"])})
        counts["failed"] += bool(row["error"])
        counts["unmatched"] += not row["error"] and not row["extracted"]
        counts["judged"] += bool(row["judged_by_llm"])
        counts["drawn"] += bool(row["judge_drawn"])
        counts["lenient_only"] += not row["vlmeval_letter"] and bool(row["lenient_letter"])
        counts["refusals"] += is_refusal(row["raw_text"])
    return {
        **_scores(records),
        "lenient": _scores(lenient),
        "vlmeval": {"commit": VLMEVAL_COMMIT, **_vlmeval_table(run, records)},
        "tasks": run_tasks_summary(run=run),
        # Confidence, calibration shift and cliffs (MedQ-DEG's findings; `services.runs.calibration`).
        **run_calibration_summary(run),
        **counts,
    }


def _scores(records: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = breakdown(records, SUMMARY_FIELDS)
    by = {
        field: {str(value): _score_json(score) for value, score in scores.items()}
        for field, scores in result["by"].items()
        if scores
    }
    return {"overall": _score_json(result["overall"]), "by": by}


def _vlmeval_table(run: Run, records: list[dict[str, Any]]) -> dict[str, Any]:
    """VLMEvalKit's table over the run's answers (the columns its release file would carry), as
    a header and rows: PostgreSQL's JSON does not keep the order of an object's keys."""
    table: list[dict[str, Any]]
    if run.benchmark.family == Family.MEDQDEG:
        table = [medqdeg_score_table(records)]
    else:
        table = vlmeval_acc_table(
            {
                "split": r["split"],
                "l2-category": r["l2_category"],
                "category": r["category"],
                "hit": r["hit"],
            }
            for r in records
        )
    header = list(table[0]) if table else []
    return {"header": header, "rows": [[_finite(row[name]) for name in header] for row in table]}


def _finite(value: Any) -> Any:
    # JSON has no NaN (PostgreSQL refuses it): a cell without items is stored as null.
    return None if isinstance(value, float) and math.isnan(value) else value


def _score_json(score: Score) -> dict[str, Any]:
    accuracy = score.accuracy if score.n else None
    return {
        "n": score.n,
        "hits": score.hits,
        "accuracy": accuracy,
        "low": score.low,
        "high": score.high,
    }


_READINGS = (
    "extracted",
    "hit",
    "vlmeval_letter",
    "judged_by_llm",
    "judge_letter",
    "judge_drawn",
    "lenient_letter",
    "lenient_hit",
)


@transaction.atomic
def run_rescore(*, run: Run) -> int:
    """Read every stored reply of an ended run again with the rules of the pinned VLMEvalKit
    commit and the lenient rules, then score the run again; how many predictions changed.

    No model or judge is asked: a judged answer whose reply exact matching still cannot read
    keeps the judge's letter; one it can now read loses it (VLMEvalKit would not have asked).
    An item changed since it was answered keeps its reading (its options were others).
    """
    if run.kind == RunKind.HUMAN:
        raise DomainError(_("A human baseline's answers are letters: there is nothing to read."))
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING):
        raise DomainError(_("Wait until the run has ended."), code="not_ended")
    family = run.benchmark.family
    changed: list[Prediction] = []
    predictions = Prediction.objects.filter(
        run=run, error="", item__kind__in=CHOICE_KINDS
    ).select_related("item")
    label_sets = run.benchmark.label_sets or {}
    for prediction in predictions.iterator(chunk_size=2000):
        item = prediction.item
        if item.version != prediction.item_version:
            continue
        try:
            options, gold = choice_options(item, label_sets)
        except TaskInputError:
            continue
        reading = reply_read(family=family, reply=prediction.raw_text, options=options, answer=gold)
        fields = Scored(reading).fields(answer=gold)
        if prediction.judged_by_llm and reading.judge_applies:
            fields.update(
                {name: getattr(prediction, name) for name in _READINGS if "judge" in name}
            )
            fields.update(extracted=prediction.extracted, hit=prediction.hit)
        if item.kind == ItemKind.LABEL:
            fields["label"] = options.get(fields["extracted"], "")
        if prediction.letter_probs is not None:
            fields["confidence"] = confidence_of(prediction.letter_probs, fields["vlmeval_letter"])
        if any(getattr(prediction, name) != value for name, value in fields.items()):
            for name, value in fields.items():
                setattr(prediction, name, value)
            changed.append(prediction)
    Prediction.objects.bulk_update(changed, [*_READINGS, "label", "confidence"], batch_size=1000)
    Run.objects.filter(pk=run.pk).update(
        vlmeval_commit=VLMEVAL_COMMIT, summary=run_summarize(run=run)
    )
    run.refresh_from_db()
    return len(changed)
