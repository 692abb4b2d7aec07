"""What clinicians' grades of generated reports say: rubric means per model, how far graders
agree, and how far ROUGE-L and BLEU-4 agree with them."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from annotations.models import Benchmark, Grade, GradingTask, Preference
from annotations.scoring import bleu4, percent_agreement, rouge_l, weighted_kappa
from annotations.selectors.grading import run_display_name

OVERALL = (1, 2, 3, 4, 5)
COUNTED = ("correct_findings", "omissions", "hallucinations")


@dataclass
class ReportAgreement:
    grades: int
    # Per model (and the reference reports): mean of each rubric criterion over its graded reports.
    models: list[dict[str, Any]] = field(default_factory=list)
    graders: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Report:
    name: str
    text: str | None  # None: the reference report itself
    reference: str
    overall: dict[int, int] = field(default_factory=dict)  # grader -> overall
    rubric: list[dict[str, int]] = field(default_factory=list)


def report_agreement(*, benchmark: Benchmark | None = None) -> ReportAgreement:
    """Every report grade (of `benchmark`), read per graded report. One query."""
    rows = Grade.objects.filter(session__task=GradingTask.REPORTS).select_related(
        "item", "left_prediction__run", "right_prediction__run"
    )
    if benchmark is not None:
        rows = rows.filter(session__run_a__benchmark=benchmark)
    grades = list(rows.order_by("pk"))
    reports: dict[tuple[str, int], _Report] = {}
    pairs: list[tuple[_Report, _Report, str]] = []
    for grade in grades:
        sides = []
        for side, prediction in (
            ("left", grade.left_prediction),
            ("right", grade.right_prediction),
        ):
            key = ("prediction", prediction.pk) if prediction else ("reference", grade.item_id)
            report = reports.setdefault(
                key,
                _Report(
                    run_display_name(prediction.run if prediction else None),
                    prediction.raw_text if prediction else None,
                    grade.item.reference,
                ),
            )
            scores = (grade.rubric or {}).get(side) or {}
            if "overall" in scores:
                report.overall[grade.grader_id] = scores["overall"]
            report.rubric.append(scores)
            sides.append(report)
        pairs.append((sides[0], sides[1], grade.preference))
    return ReportAgreement(
        len(grades),
        _model_means(reports.values()),
        _grader_agreement(reports.values()),
        _metric_agreement(reports.values(), pairs),
    )


def _model_means(reports) -> list[dict[str, Any]]:
    by_model: dict[str, list[dict[str, int]]] = defaultdict(list)
    for report in reports:
        by_model[report.name].extend(report.rubric)
    rows = []
    for name, rubrics in sorted(by_model.items()):
        row: dict[str, Any] = {"model": name, "n": len(rubrics)}
        for criterion in (*COUNTED, "overall"):
            values = [r[criterion] for r in rubrics if criterion in r]
            row[criterion] = sum(values) / len(values) if values else None
        rows.append(row)
    return rows


def _grader_agreement(reports) -> dict[str, Any]:
    """Overall grades of one report by two graders: every pair of its graders is one unit."""
    first: list[int] = []
    second: list[int] = []
    for report in reports:
        for x, y in itertools.combinations(report.overall.values(), 2):
            first.append(x)
            second.append(y)
    if not first:
        return {"pairs": 0, "kappa": None, "exact": None, "within_one": None}
    kappa = weighted_kappa(first, second, OVERALL)
    return {
        "pairs": len(first),
        "kappa": None if math.isnan(kappa) else kappa,
        "exact": percent_agreement(zip(first, second, strict=True)),
        "within_one": sum(abs(x - y) <= 1 for x, y in zip(first, second, strict=True)) / len(first),
    }


def _metric_agreement(reports, pairs) -> dict[str, Any]:
    """Spearman's rho of each model report's mean overall grade with its ROUGE-L and BLEU-4
    against the reference; and, over side-by-side grades with a preference between two model
    reports, how often the report the metric scores higher is the one the clinician preferred."""
    scored = {}
    for report in reports:
        if report.text is not None and report.reference.strip():
            scored[id(report)] = (
                rouge_l(report.text, report.reference),
                bleu4(report.text, report.reference),
            )
    graded = [
        (sum(r.overall.values()) / len(r.overall), *scored[id(r)])
        for r in reports
        if id(r) in scored and r.overall
    ]
    result: dict[str, Any] = {"reports": len(graded)}
    for position, name in ((1, "rouge_l"), (2, "bleu4")):
        result[f"spearman_{name}"] = _spearman(
            [g[0] for g in graded], [g[position] for g in graded]
        )
    decided = [
        (left, right, preference)
        for left, right, preference in pairs
        if preference in (Preference.LEFT, Preference.RIGHT)
        and id(left) in scored
        and id(right) in scored
    ]
    result["preferences"] = len(decided)
    for position, name in ((0, "rouge_l"), (1, "bleu4")):
        agreeing = [
            (scored[id(left)][position] > scored[id(right)][position])
            == (preference == Preference.LEFT)
            for left, right, preference in decided
            if scored[id(left)][position] != scored[id(right)][position]
        ]
        result[f"agrees_{name}"] = sum(agreeing) / len(agreeing) if agreeing else None
    return result


def _spearman(x: list[float], y: list[float]) -> float | None:
    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None  # undefined (or meaningless) for fewer than three reports or a constant
    from scipy.stats import spearmanr  # scipy is heavy: only this page pays for it

    rho = spearmanr(x, y).statistic
    return None if math.isnan(rho) else float(rho)
