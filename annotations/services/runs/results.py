"""A run's scores and every prediction as one JSON document: what `run_model --out` writes, the
run page's download and `GET /api/runs/ID/results/` serve, and `python -m annotations.scoring
RELEASE FILE` reads to print the same `tasks` (docs/releases.md)."""

from __future__ import annotations

from typing import Any

from annotations.models import Prediction, Run
from annotations.selectors.runs import run_predictions
from annotations.services.runs.task_scores import tasks_block


def run_results(run: Run) -> dict[str, Any]:
    """Scores, VLMEvalKit's own table and every prediction with each of its readings."""
    summary = run.summary
    document = {
        "run": run.pk,
        "label": run.label,
        "benchmark": run.benchmark.name,
        "family": run.benchmark.family,
        "seed": run.seed,  # the bootstrap's: `python -m annotations.scoring` redraws alike
        "vlmeval_commit": run.vlmeval_commit,
        "overall": summary.get("overall", {}).get("accuracy"),
        "by": _accuracies(summary),
        "vlmeval": _vlmeval_rows(summary.get("vlmeval", {})),
        # Gastric-X's five tasks, exactly the keys; their breakdowns beside.
        "tasks": tasks_block(summary),
        "task_details": summary.get("tasks", {}),
        # Calibration overall and by breakdown, its shift on twins, and the cliffs with the
        # rule that found them (None: no answer has a confidence).
        "calibration": summary.get("calibration"),
        "logprobs_refused": run.logprobs_refused,
        "cliffs": summary.get("cliffs"),
        "predictions": [_prediction_row(p, run) for p in run_predictions(run=run)],
    }
    if run.lenient:
        document["lenient"] = {
            "overall": summary.get("lenient", {}).get("overall", {}).get("accuracy"),
            "by": _accuracies(summary.get("lenient", {})),
        }
    return document


def _vlmeval_rows(vlmeval: dict) -> dict:
    """VLMEvalKit's table as rows keyed by its column names, in its column order."""
    header = vlmeval.get("header", [])
    rows = [dict(zip(header, row, strict=True)) for row in vlmeval.get("rows", [])]
    return {"commit": vlmeval.get("commit"), "table": rows}


def _accuracies(scores: dict) -> dict:
    return {
        field: {value: score["accuracy"] for value, score in by_value.items()}
        for field, by_value in scores.get("by", {}).items()
    }


def _prediction_row(prediction: Prediction, run: Run) -> dict:
    """The reply, VLMEvalKit's letter (None for Z) and the hit; the judge's letter where the
    judge ran; the lenient letter and hit when the run scores leniently too."""
    row = {
        "index": prediction.item.source_index,
        "prediction": prediction.raw_text,
        "vlmeval_letter": prediction.vlmeval_letter or None,
        "hit": prediction.hit,
        "confidence": prediction.confidence,
    }
    kind = prediction.item.kind
    if kind == "label":
        row["label"] = prediction.label or None
    elif kind == "box":
        row["box"] = prediction.box
        if prediction.slice_boxes is not None:
            row["slice_boxes"] = prediction.slice_boxes
    elif kind == "retrieval":
        row["report_to_case_rank"] = prediction.report_to_case_rank
        row["case_to_report_rank"] = prediction.case_to_report_rank
    if kind != "mcq":
        row["kind"] = kind
    if prediction.error:
        row["error"] = prediction.error
    if prediction.judged_by_llm:
        row["judge_letter"] = prediction.judge_letter or None
        row["judge_drawn"] = prediction.judge_drawn
    if run.lenient:
        row["lenient_letter"] = prediction.lenient_letter or None
        row["lenient_hit"] = prediction.lenient_hit
    return row
