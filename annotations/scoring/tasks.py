"""The `tasks` block of `run_model --out FILE.json`: Gastric-X's five tasks, each metric with its CI.

API:
- `build_tasks_summary(*, vqa=(), classification=(), label_sets={}, reports=(),
  localization=(), slices=(), retrieval=None, resamples=1000, seed=0) -> dict` with the
  per-item outcomes below (any task may be empty) and returns a JSON-ready dict. `slices`: the
  2D images asked for localization (`scoring.coco.SliceOutcome`: every CT slice asked for a 3D
  target, beyond its ends too, and each 2D item's image) for the standard COCO figures.
- Per-item outcomes: `ChoiceOutcome(truth, predicted, field="")` for VQA and classification
  (`field` names the classification target, e.g. "tnm", "t", "n", "m", and selects its label set
  in `label_sets`); `ReportOutcome(reference, generated, kind="")` (`kind`: "diagnostic", "ct",
  "endoscopy"); `BoxOutcome(truth, predicted, score=1.0)` (2D or 3D boxes; None = no answer);
  retrieval as `scoring.retrieval.CrossModalRanks`.

Shape: always the five keys of issue 20, each with the issue's metric keys, every metric as
`{"value": x, "ci95": [low, high], "n": n}` (None for a value that is undefined, e.g. a task
without items, whose n is 0). Beside the issue's keys, extras that readers need:
    {"vqa": {"accuracy"},
     "classification": {"accuracy", "macro_f1", "macro_f1_no_support", "by_field": {field:
                        {"accuracy", "macro_f1", "macro_f1_no_support",
                        "confusion": {"labels", "matrix", "unlisted"}}}},
     "report_generation": {"rouge_l", "bleu4", "bleu_signature", "by_kind": {kind: {...}}},
     "localization": {"mean_iou", "ap50", "coco_ap50", "coco_ap", "slice_iou", "coco_counts",
                      "by_dimension": {"2d"|"3d": {"mean_iou", "ap50"}}},
     "definitions": {metric: what it is}  (METRIC_DEFINITIONS: each figure labelled)
     "retrieval": {"recall_at_1", "recall_at_5", "recall_at_10", "median_rank",
                   "report_to_case": {...the four...}, "case_to_report": {...the four...}}}

Definitions (the metrics' own modules say more):
- accuracy: exact match of the predicted letter/label; None (no answer extracted) is wrong.
- classification macro_f1: per target field, scikit-learn's `f1_score(average="macro",
  labels=<the field's label set>)` with its default `zero_division="warn"` (a label with neither
  support nor prediction scores 0); macro_f1_no_support: the same with `zero_division=np.nan`
  (such a label is left out). A missing answer is a miss of the true label, no one's false
  positive. The top-level values are the means over fields (each target weighs the same).
- rouge_l: mean of per-report ROUGE-L F1; bleu4: sacrebleu corpus BLEU-4, both in [0, 1].
- mean_iou: mean per-item IoU (no answer: 0); ap50: VOC all-point AP at IoU 0.5 over items (2D
  or 3D boxes) with tied scores grouped (models give no confidence, so usually one operating
  point: precision x recall) -- ours, not COCO's. coco_ap50 / coco_ap: pycocotools' AP50 and
  AP@[.5:.95] over `slices` (`scoring.coco`); slice_iou: mean IoU over the same slices (those
  with a truth or a prediction). COCO figures have no interval (ci95 [None, None]).
- retrieval: the top-level values are the means of the two directions' values; the bootstrap
  resamples cases (a case with its reports), so both directions move together.
- CIs: percentile bootstrap, `resamples` draws with `seed`, items as the unit (`scoring.bootstrap`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from annotations.scoring.bootstrap import (
    DEFAULT_RESAMPLES,
    Estimate,
    bootstrap_mean,
    bootstrap_statistic,
)
from annotations.scoring.boxes import ap_from_hits, iou
from annotations.scoring.classification import (
    confusion_matrix,
    encode_labels,
    f1_from_confusion,
    label_counts,
)
from annotations.scoring.coco import COCO_EVALUATOR, SliceOutcome, coco_ap, slice_iou
from annotations.scoring.retrieval import RECALL_KS, CrossModalRanks
from annotations.scoring.text import (
    bleu_from_statistics,
    bleu_signature,
    bleu_statistics,
    bleu_tokenizer,
    rouge_l,
)

__all__ = [
    "AP_IOU_THRESHOLD",
    "METRIC_DEFINITIONS",
    "TASK_KEYS",
    "BoxOutcome",
    "ChoiceOutcome",
    "ReportOutcome",
    "build_tasks_summary",
    "issue_keys",
    "run_tasks_block",
    "json_safe",
]

AP_IOU_THRESHOLD = 0.5
TASK_KEYS: dict[str, tuple[str, ...]] = {
    "vqa": ("accuracy",),
    "classification": ("accuracy", "macro_f1", "macro_f1_no_support"),
    "report_generation": ("rouge_l", "bleu4"),
    "localization": ("mean_iou", "ap50", "coco_ap50", "coco_ap", "slice_iou"),
    "retrieval": ("recall_at_1", "recall_at_5", "recall_at_10", "median_rank"),
}

METRIC_DEFINITIONS = {
    "classification.macro_f1": "scikit-learn f1_score(average='macro', labels=the label set), "
    "default zero_division ('warn': 0), per field; mean over fields",
    "classification.macro_f1_no_support": "as macro_f1 with zero_division=nan: a label with "
    "neither support nor prediction left out (ours)",
    "localization.mean_iou": "mean per-item IoU, 2D or 3D boxes (no answer: 0)",
    "localization.ap50": "VOC all-point AP at IoU 0.5 over items (2D or 3D boxes), tied scores "
    "grouped (ours, not COCO's)",
    "localization.coco_ap50": "COCO AP50 over the slices asked: " + COCO_EVALUATOR,
    "localization.coco_ap": "COCO AP@[.5:.95] over the slices asked: " + COCO_EVALUATOR,
    "localization.slice_iou": "mean 2D IoU over the slices asked that hold a truth or a "
    "prediction (every CT slice asked, beyond the box's ends too; each 2D item's image)",
}


@dataclass(frozen=True)
class ChoiceOutcome:
    """One VQA or classification item: the true letter/label and the extracted prediction."""

    truth: str
    predicted: str | None
    field: str = ""


@dataclass(frozen=True)
class ReportOutcome:
    """One report-generation item: the reference report and the model's report (None: none)."""

    reference: str
    generated: str | None
    kind: str = ""


@dataclass(frozen=True)
class BoxOutcome:
    """One localization item: the true box, the parsed predicted box (None: none) and its score."""

    truth: Sequence[float]
    predicted: Sequence[float] | None
    score: float = 1.0


@dataclass(frozen=True)
class _Bootstrap:
    resamples: int
    seed: int

    def mean(self, values: Sequence[float] | np.ndarray) -> dict[str, Any]:
        return bootstrap_mean(values, resamples=self.resamples, seed=self.seed).as_dict()

    def statistic(self, n_items: int, statistic: Callable[[np.ndarray], float]) -> Estimate:
        return bootstrap_statistic(n_items, statistic, resamples=self.resamples, seed=self.seed)


def build_tasks_summary(
    *,
    vqa: Sequence[ChoiceOutcome] = (),
    classification: Sequence[ChoiceOutcome] = (),
    label_sets: Mapping[str, Sequence[str]] | None = None,
    reports: Sequence[ReportOutcome] = (),
    localization: Sequence[BoxOutcome] = (),
    slices: Sequence[SliceOutcome] = (),
    retrieval: CrossModalRanks | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """The `tasks` block for one run (see the module docstring for its shape).

    Raises ValueError when a classification field has no label set or a true label is outside it.
    """
    boot = _Bootstrap(resamples, seed)
    return {
        "vqa": {"accuracy": boot.mean([o.predicted == o.truth for o in vqa])},
        "classification": _classification_block(classification, label_sets or {}, boot),
        "report_generation": _report_block(reports, boot),
        "localization": _localization_block(localization, slices, boot),
        "retrieval": _retrieval_block(retrieval, boot),
        "definitions": METRIC_DEFINITIONS,
    }


def _classification_block(
    outcomes: Sequence[ChoiceOutcome], label_sets: Mapping[str, Sequence[str]], boot: _Bootstrap
) -> dict[str, Any]:
    fields = sorted({o.field for o in outcomes})
    missing = [field for field in fields if field not in label_sets]
    if missing:
        raise ValueError(f"no label set for classification field(s) {missing}")
    encoded = {field: _encode_field(outcomes, field, label_sets[field]) for field in fields}
    by_field = {}
    for field, (positions, true_codes, predicted_codes) in encoded.items():
        labels = label_sets[field]
        chosen = [outcomes[i] for i in positions]
        by_field[field] = {
            "accuracy": boot.mean(true_codes == predicted_codes),
            **{
                name: boot.statistic(
                    len(positions),
                    _field_macro_f1(true_codes, predicted_codes, len(labels), zero_division),
                ).as_dict()
                for name, zero_division in _MACRO_F1.items()
            },
            "confusion": confusion_matrix(
                [o.truth for o in chosen], [o.predicted for o in chosen], labels
            ).as_dict(),
        }
    block = {"accuracy": boot.mean([o.predicted == o.truth for o in outcomes])}
    for name, zero_division in _MACRO_F1.items():
        pooled = _pooled_macro_f1(
            len(outcomes), list(encoded.values()), label_sets, fields, zero_division
        )
        block[name] = boot.statistic(len(outcomes), pooled).as_dict()
    return {**block, "by_field": by_field}


# scikit-learn's default (a label with neither support nor prediction scores 0), and ours.
_MACRO_F1 = {"macro_f1": 0.0, "macro_f1_no_support": math.nan}


def _encode_field(
    outcomes: Sequence[ChoiceOutcome], field: str, labels: Sequence[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    positions = np.array([i for i, o in enumerate(outcomes) if o.field == field], dtype=np.int64)
    true_codes, predicted_codes = encode_labels(
        [outcomes[i].truth for i in positions], [outcomes[i].predicted for i in positions], labels
    )
    return positions, true_codes, predicted_codes


def _macro(
    true_codes: np.ndarray, predicted_codes: np.ndarray, n_labels: int, zero_division: float
) -> float:
    counts = label_counts(true_codes, predicted_codes, n_labels)
    scores = f1_from_confusion(counts, zero_division)
    return math.nan if np.all(np.isnan(scores)) else float(np.nanmean(scores))


def _field_macro_f1(
    true_codes: np.ndarray, predicted_codes: np.ndarray, n_labels: int, zero_division: float
) -> Callable[[np.ndarray], float]:
    def statistic(indices: np.ndarray) -> float:
        return _macro(true_codes[indices], predicted_codes[indices], n_labels, zero_division)

    return statistic


def run_tasks_block(
    *,
    vqa: Sequence[ChoiceOutcome],
    classification: Sequence[ChoiceOutcome],
    label_sets: Mapping[str, Sequence[str]],
    reports: Sequence[ReportOutcome],
    localization: Sequence[BoxOutcome],
    asked: Sequence[SliceOutcome],
    on_slices: Sequence[BoxOutcome],
    retrieval: CrossModalRanks | None,
    answered: Mapping[str, int],
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """The `tasks` block of a run as `run_model --out` writes it: the scores per task, the
    localization figures on the slices inside each box, how many items each task has and how many
    were answered. One function for the run and the standalone scorer, so they cannot drift."""
    summary = build_tasks_summary(
        vqa=vqa,
        classification=classification,
        label_sets=label_sets,
        reports=reports,
        localization=localization,
        slices=asked,
        retrieval=retrieval,
        resamples=resamples,
        seed=seed,
    )
    if on_slices:
        by_slice = build_tasks_summary(localization=on_slices, resamples=resamples)
        summary["localization"]["by_slice"] = {
            name: by_slice["localization"][name] for name in ("mean_iou", "ap50")
        }
    summary["counts"] = {
        "vqa": len(vqa),
        "classification": len(classification),
        "report_generation": len(reports),
        "localization": len(localization),
        "retrieval": len(retrieval.report_to_case) if retrieval is not None else 0,
    }
    summary["answered"] = {task: answered[task] for task in TASK_KEYS}
    return json_safe(summary)


def _pooled_macro_f1(
    n_items: int,
    encoded: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    label_sets: Mapping[str, Sequence[str]],
    fields: list[str],
    zero_division: float,
) -> Callable[[np.ndarray], float]:
    """Mean over fields of each field's macro-F1, on a draw of all classification items."""
    field_of = np.empty(n_items, dtype=np.int64)
    true_of = np.empty(n_items, dtype=np.int64)
    predicted_of = np.empty(n_items, dtype=np.int64)
    for number, (positions, true_codes, predicted_codes) in enumerate(encoded):
        field_of[positions], true_of[positions] = number, true_codes
        predicted_of[positions] = predicted_codes
    sizes = [len(label_sets[field]) for field in fields]

    def statistic(indices: np.ndarray) -> float:
        per_field = []
        for number, size in enumerate(sizes):
            chosen = indices[field_of[indices] == number]
            if chosen.size:
                per_field.append(_macro(true_of[chosen], predicted_of[chosen], size, zero_division))
        defined = [value for value in per_field if not math.isnan(value)]
        return sum(defined) / len(defined) if defined else math.nan

    return statistic


def _report_block(outcomes: Sequence[ReportOutcome], boot: _Bootstrap) -> dict[str, Any]:
    references = [o.reference for o in outcomes]
    generated = [o.generated for o in outcomes]
    tokenize = bleu_tokenizer([*references, *generated])
    # Scored once per report (rouge-score's LCS is the slow part) and reused for every subset.
    rouge = np.array([rouge_l(g, r) for g, r in zip(generated, references, strict=True)])
    statistics = bleu_statistics(generated, references, tokenize)

    def metrics(chosen: np.ndarray) -> dict[str, Any]:
        rows = statistics[chosen]
        return {
            "rouge_l": boot.mean(rouge[chosen]),
            "bleu4": boot.statistic(
                len(chosen), lambda indices: bleu_from_statistics(rows[indices])
            ).as_dict(),
        }

    block = metrics(np.arange(len(outcomes)))
    block["bleu_signature"] = bleu_signature(tokenize)
    kinds = np.array([o.kind for o in outcomes], dtype=object)
    block["by_kind"] = {
        kind: metrics(np.flatnonzero(kinds == kind))
        for kind in sorted({o.kind for o in outcomes if o.kind})
    }
    return block


def _localization_block(
    outcomes: Sequence[BoxOutcome], slices: Sequence[SliceOutcome], boot: _Bootstrap
) -> dict[str, Any]:
    block = _localization_metrics(outcomes, boot)
    coco = coco_ap(slices)
    n_images = coco["images"]
    block["coco_ap50"] = {"value": coco["ap50"], "ci95": [None, None], "n": n_images}
    block["coco_ap"] = {"value": coco["ap"], "ci95": [None, None], "n": n_images}
    block["slice_iou"] = boot.mean(slice_iou(slices))
    block["coco_counts"] = {key: coco[key] for key in ("images", "truths", "detections")}
    block["by_dimension"] = {
        name: _localization_metrics([o for o in outcomes if len(o.truth) == size], boot)
        for name, size in (("2d", 4), ("3d", 6))
        if any(len(o.truth) == size for o in outcomes)
    }
    return block


def _localization_metrics(outcomes: Sequence[BoxOutcome], boot: _Bootstrap) -> dict[str, Any]:
    overlaps = np.array(
        [0.0 if o.predicted is None else iou(o.truth, o.predicted) for o in outcomes]
    )
    answered = np.array([o.predicted is not None for o in outcomes], dtype=bool)
    scores = np.array([o.score for o in outcomes], dtype=np.float64)
    hits = answered & (overlaps >= AP_IOU_THRESHOLD)

    def ap50(indices: np.ndarray) -> float:
        chosen = indices[answered[indices]]
        return ap_from_hits(scores[chosen], hits[chosen], len(indices), group_ties=True)

    return {
        "mean_iou": boot.mean(overlaps),
        "ap50": boot.statistic(len(outcomes), ap50).as_dict(),
    }


def _retrieval_block(ranks: CrossModalRanks | None, boot: _Bootstrap) -> dict[str, Any]:
    ranks = ranks or CrossModalRanks((), (), (), ())
    unit_of_case = {case: unit for unit, case in enumerate(ranks.queried_cases)}
    report_unit = np.array([unit_of_case[c] for c in ranks.report_case], dtype=np.int64)
    report_ranks = np.array(ranks.report_to_case, dtype=np.float64)
    case_ranks = np.array(ranks.case_to_report, dtype=np.float64)
    n_units = len(case_ranks)

    def directions(indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        weights = np.bincount(indices, minlength=n_units)[report_unit]
        return np.repeat(report_ranks, weights), case_ranks[indices]

    def metric(name: str, which: str) -> dict[str, Any]:
        def statistic(indices: np.ndarray) -> float:
            report_to_case, case_to_report = directions(indices)
            values = {
                "report_to_case": _rank_metric(name, report_to_case),
                "case_to_report": _rank_metric(name, case_to_report),
            }
            return values[which] if which in values else sum(values.values()) / 2

        estimate = boot.statistic(n_units, statistic)
        if which == "report_to_case":
            estimate = dataclasses.replace(estimate, n=len(report_ranks))
        return estimate.as_dict()

    names = [f"recall_at_{k}" for k in RECALL_KS] + ["median_rank"]
    block: dict[str, Any] = {name: metric(name, "both") for name in names}
    for which in ("report_to_case", "case_to_report"):
        block[which] = {name: metric(name, which) for name in names}
    return block


def _rank_metric(name: str, ranks: np.ndarray) -> float:
    if ranks.size == 0:
        return math.nan
    if name == "median_rank":
        return float(np.median(ranks))
    return float(np.mean(ranks <= int(name.removeprefix("recall_at_"))))


def issue_keys(tasks: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Exactly the `tasks` keys of `run_model --out` (TASK_KEYS) from a tasks summary."""
    return {
        task: {name: (tasks.get(task) or {}).get(name) for name in names}
        for task, names in TASK_KEYS.items()
    }


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float as None (PostgreSQL's JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(key): json_safe(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
