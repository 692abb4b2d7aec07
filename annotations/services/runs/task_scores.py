"""A run's scores per task (Gastric-X's five), through the pure `scoring.tasks` layer.

Retrieval pairs are ranked here, when the run is scored: a pair's rank depends on every other
pair of the run (cosine similarity within the run's items of the benchmark), so it is written on
the predictions then, not when each answer arrives.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from annotations.inference.task_prompts import box_slices
from annotations.models import Item, ItemKind, Prediction, Run, Volume
from annotations.scoring.boxes import box_on_slice
from annotations.scoring.coco import SliceOutcome, target_slices
from annotations.scoring.retrieval import CrossModalRanks, cross_modal_ranks
from annotations.scoring.tasks import (
    BoxOutcome,
    ChoiceOutcome,
    ReportOutcome,
    issue_keys,
    run_tasks_block,
)
from annotations.selectors.runs import TASK_OF_KIND
from annotations.services.runs.tasks import box_truth, label_field, report_kind

TASK_RESAMPLES = 1000
_FIELDS = (
    "pk",
    "error",
    "raw_text",
    "extracted",
    "label",
    "box",
    "slice_boxes",
    "embedding",
    "item__kind",
    "item__answer",
    "item__reference",
    "item__target",
    "item__task",
    "item__case_id",
    "item__case__case_id",
    "item__source_index",
)


@dataclass
class _Outcomes:
    vqa: list[ChoiceOutcome] = field(default_factory=list)
    classification: list[ChoiceOutcome] = field(default_factory=list)
    reports: list[ReportOutcome] = field(default_factory=list)
    boxes: list[BoxOutcome] = field(default_factory=list)
    slices: list[BoxOutcome] = field(default_factory=list)
    asked: list[SliceOutcome] = field(default_factory=list)  # every 2D image asked
    pairs: list[tuple[int, str, dict[str, list[float]]]] = field(default_factory=list)
    answered: Counter[str] = field(default_factory=Counter)  # by task, without an error


def _item(row: dict[str, Any]) -> Item:
    """An unsaved Item carrying what the task readers look at."""
    return Item(
        kind=row["item__kind"],
        answer=row["item__answer"],
        reference=row["item__reference"],
        target=row["item__target"],
        task=row["item__task"],
    )


def _outcomes(
    rows: Iterable[dict[str, Any]], sizes: dict[tuple[int, str], int] | None = None
) -> _Outcomes:
    found = _Outcomes()
    for row in rows:
        kind, item = row["item__kind"], _item(row)
        answered = not row["error"]
        found.answered[TASK_OF_KIND[kind]] += answered
        if kind == ItemKind.MCQ:
            found.vqa.append(ChoiceOutcome(item.answer, row["extracted"] or None))
        elif kind == ItemKind.LABEL:
            predicted = row["label"] or None
            found.classification.append(ChoiceOutcome(item.answer, predicted, label_field(item)))
        elif kind == ItemKind.OPEN:
            text = row["raw_text"] if answered and row["raw_text"].strip() else None
            found.reports.append(ReportOutcome(item.reference, text, report_kind(item)))
        elif kind == ItemKind.BOX:
            _box_outcomes(found, item, row, sizes or {})
        elif kind == ItemKind.RETRIEVAL and answered and row["embedding"]:
            # Cases are known by their code, as a release names them (its scorer ranks alike).
            found.pairs.append((row["pk"], row["item__case__case_id"], row["embedding"]))
    return found


def _box_outcomes(
    found: _Outcomes, item: Item, row: dict[str, Any], sizes: dict[tuple[int, str], int]
) -> None:
    truth = box_truth(item)
    if truth is None:
        return
    found.boxes.append(BoxOutcome(truth, row["box"] if not row["error"] else None))
    found.asked += asked_slices(
        row["item__source_index"],
        truth,
        None if row["error"] else row["box"],
        None if row["error"] else row["slice_boxes"],
        sizes.get((row["item__case_id"], str((item.target or {}).get("phase")))),
    )
    # 2D per slice: each slice asked that the target crosses, against the target's section.
    for z, box in (row["slice_boxes"] or {}).items():
        section = box_on_slice(truth, int(z)) if len(truth) == 6 else None
        if section is not None:
            found.slices.append(BoxOutcome(section, box))


def asked_slices(
    index: int,
    truth: list[float],
    box: list[float] | None,
    slice_boxes: dict[str, Any] | None,
    size_z: int | None,
) -> list[SliceOutcome]:
    """The 2D images asked for one localization item (`scoring.coco.target_slices`): a 3D
    target's slices are those `box_slices` asks, as its release lists them."""
    if len(truth) == 4:
        return target_slices(index, truth, box, None, ())
    if size_z is None:
        return []
    slices, _spans = box_slices(int(truth[2]), int(math.ceil(truth[5])), size_z)
    return target_slices(index, truth, box, slice_boxes, slices)


def _ranks(pairs: list[tuple[int, str, dict[str, list[float]]]]) -> CrossModalRanks | None:
    if not pairs:
        return None
    cases = sorted({case for _pk, case, _e in pairs})
    position = {case: n for n, case in enumerate(cases)}
    case_vectors: dict[str, list[float]] = {}
    for _pk, case, embedding in pairs:
        case_vectors.setdefault(case, embedding["case"])
    return cross_modal_ranks(
        [embedding["report"] for _pk, _c, embedding in pairs],
        [case_vectors[case] for case in cases],
        [position[case] for _pk, case, _e in pairs],
    )


def _rows(run: Run):
    return Prediction.objects.filter(run=run).order_by("item__source_index").values(*_FIELDS)


def retrieval_ranks_store(*, run: Run) -> None:
    """Write each retrieval pair's ranks (report -> its case, its case -> its reports)."""
    rows = _rows(run).filter(item__kind=ItemKind.RETRIEVAL, error="")
    found = _outcomes(rows.iterator(chunk_size=500))
    ranks = _ranks(found.pairs)
    if ranks is None:
        return
    case_rank = dict(zip(ranks.queried_cases, ranks.case_to_report, strict=True))
    predictions = []
    for (pk, _case, _e), to_case, case in zip(
        found.pairs, ranks.report_to_case, ranks.report_case, strict=True
    ):
        predictions.append(
            Prediction(pk=pk, report_to_case_rank=to_case, case_to_report_rank=case_rank[case])
        )
    Prediction.objects.bulk_update(
        predictions, ["report_to_case_rank", "case_to_report_rank"], batch_size=1000
    )


def run_tasks_summary(*, run: Run, resamples: int = TASK_RESAMPLES) -> dict[str, Any]:
    """The run's scores per task, each with its bootstrap 95% interval (`scoring.tasks`), and
    how many items of each task it answered."""
    rows = _rows(run)
    found = _outcomes(rows.iterator(chunk_size=2000), _volume_sizes(rows))
    label_sets = _label_sets(run, found.classification)
    return run_tasks_block(
        vqa=found.vqa,
        classification=found.classification,
        label_sets=label_sets,
        reports=found.reports,
        localization=found.boxes,
        asked=found.asked,
        on_slices=found.slices,
        retrieval=_ranks(found.pairs),
        answered=found.answered,
        resamples=resamples,
        seed=run.seed,
    )


def _volume_sizes(rows) -> dict[tuple[int, str], int]:
    """Slices per (case, phase) of the cases of the run's 3D localization items."""
    cases = rows.filter(item__kind=ItemKind.BOX, item__case_id__isnull=False)
    volumes = Volume.objects.filter(case_id__in=cases.values("item__case_id"))
    return {(c, phase): z for c, phase, z in volumes.values_list("case_id", "phase", "size_z")}


def _label_sets(run: Run, outcomes: list[ChoiceOutcome]) -> dict[str, list[str]]:
    """The benchmark's label sets; a field without one (or whose set misses a true label) is
    scored over the labels seen, so that a run is scored rather than refused."""
    sets = {name: list(labels) for name, labels in (run.benchmark.label_sets or {}).items()}
    for outcome in outcomes:
        labels = sets.setdefault(outcome.field, [])
        if outcome.truth not in labels:
            labels.append(outcome.truth)
    return sets


def tasks_block(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Exactly the issue's `tasks` keys (each metric's value, interval and n) from a summary."""
    return issue_keys(summary.get("tasks") or {})
