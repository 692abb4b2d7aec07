"""Scoring glue: a reply read by the family's rules (and the judge's reading), a run's summary."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from annotations.inference import ChatProvider, InferenceItem, ProviderError
from annotations.models import Family, Item, Prediction, Run
from annotations.scoring import Score, breakdown, extract_mcq, extract_medqdeg, is_refusal
from annotations.scoring.judge import build_judge_prompt, read_judge_reply
from annotations.selectors.runs import SUMMARY_FIELDS

log = logging.getLogger(__name__)


def prediction_score(*, item: Item, family: str, text: str) -> tuple[str, bool]:
    """(extracted letter or "", hit) for an answer, with the family's own extraction rules."""
    extracted = answer_letter(options=dict(item.lettered_options), family=family, text=text)
    return extracted, bool(extracted) and extracted == item.answer


def answer_letter(*, options: dict[str, str], family: str, text: str) -> str:
    """The option letter an answer gives by the family's rules, or ''."""
    if family == Family.MEDQDEG:
        letters = "".join(letter for letter in options if letter in "ABCDE")
        extracted = extract_medqdeg(text, letters) if letters else None
    else:
        extracted = extract_mcq(text, options)
    return extracted or ""


def judge_reading(
    judge: ChatProvider | None, item: InferenceItem, text: str, *, family: str, run_id: int
) -> str | None:
    """The judge's letter for an answer the rules cannot read ('' for none); None when the rules
    can, when there is no judge, or when the judge could not be reached (the answer stays
    unmatched). Runs in a pool thread: no ORM."""
    if (
        judge is None
        or not text.strip()
        or answer_letter(options=item.options, family=family, text=text)
    ):
        return None
    prompt = build_judge_prompt(item.question, item.options, text)
    try:
        reply = judge.complete([{"role": "user", "content": prompt}])
    except ProviderError as error:
        log.warning("run %s: item %s: the judge failed: %s", run_id, item.key, error)
        return None
    letters = "".join(letter for letter, option in item.options.items() if str(option).strip())
    return read_judge_reply(reply.text, letters)


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


def _score_json(score: Score) -> dict[str, Any]:
    accuracy = score.accuracy if score.n else None
    return {
        "n": score.n,
        "hits": score.hits,
        "accuracy": accuracy,
        "low": score.low,
        "high": score.high,
    }
