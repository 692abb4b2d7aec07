"""A run's calibration, calibration shift, cliffs and skill-specific robustness, for its summary.

The figures are `scoring.calibration` and `scoring.cliffs` over the run's multiple-choice answers
(one query); the breakdowns are MedQ-DEG's: severity (clean / mild / severe), degradation type,
modality, source and capability. An item's capability is its `capability` column (kept in
`Item.extra` on import and copied to its twins), else its `l2_category`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from annotations.models import Prediction, Run
from annotations.scoring.calibration import CalibrationSettings, calibration_by, calibration_shift
from annotations.scoring.cliffs import CliffRule, capability_robustness, find_cliffs
from annotations.selectors.calibration import item_capability, item_level
from annotations.services.runs.tasks import CHOICE_KINDS

CALIBRATION_FIELDS = ("severity", "degradation_type", "modality", "source", "capability")


def cliff_rule() -> CliffRule:
    """The cliff rule's thresholds: the `CLIFF_RULE` setting (CLIFF_RATIO, CLIFF_MIN_DROP,
    CLIFF_ALPHA, CLIFF_MIN_TWINS in the environment); keys it lacks keep their defaults."""
    overrides = getattr(settings, "CLIFF_RULE", None) or {}
    return CliffRule(**overrides)


def run_records(run: Run) -> list[dict[str, Any]]:
    """One plain record per multiple-choice answer of the run (one query)."""
    family = run.benchmark.family
    rows = Prediction.objects.filter(run=run, item__kind__in=CHOICE_KINDS).values(
        "item_id",
        "hit",
        "confidence",
        "item__clean_twin_id",
        "item__degradation_severity",
        "item__degradation_type",
        "item__modality",
        "item__source",
        "item__extra",
        "item__l2_category",
    )
    return [
        {
            "item": row["item_id"],
            "hit": row["hit"] is True,
            "confidence": row["confidence"],
            "clean_twin": row["item__clean_twin_id"],
            "severity": item_level(severity=row["item__degradation_severity"], family=family),
            "degradation_type": row["item__degradation_type"],
            "modality": row["item__modality"],
            "source": row["item__source"],
            "capability": item_capability(row["item__extra"], row["item__l2_category"]),
        }
        for row in rows.order_by("item_id").iterator(chunk_size=2000)
    ]


def run_calibration_summary(run: Run, records: list[dict[str, Any]] | None = None) -> dict:
    """`{"calibration": ..., "cliffs": ...}` for the run's summary; `calibration` is None when
    no answer has a confidence (a baseline, an endpoint without log-probabilities)."""
    records = run_records(run) if records is None else records
    options = CalibrationSettings(seed=run.seed)
    calibration = None
    if any(r["confidence"] is not None for r in records):
        calibration = calibration_by(records, CALIBRATION_FIELDS, options)
        calibration["method"] = "logprobs"
        calibration["shift"] = calibration_shift(records, options)
    cliffs = find_cliffs(records, cliff_rule())
    cliffs["capability"] = capability_robustness(records)
    return {"calibration": calibration, "cliffs": cliffs}
