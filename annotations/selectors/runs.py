"""Reads for runs and leaderboards: listings, chunks, predictions, scores per task (grading's
reads are in `selectors.grading`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from annotations.charts import accuracy_chart
from annotations.models import (
    CURATED_STATUSES,
    TAXONOMY_FIELDS,
    Benchmark,
    Family,
    Item,
    ItemKind,
    Prediction,
    Run,
    RunChunk,
    RunStatus,
)

# Every field a run can be filtered on and its accuracy broken down by.
SUMMARY_FIELDS = (*TAXONOMY_FIELDS, "degradation_type", "degradation_severity")
FILTER_FIELDS = ("status", *SUMMARY_FIELDS)
LEADERBOARD_STATUSES = (RunStatus.DONE, RunStatus.CANCELLED)


def run_list(*, benchmark: Benchmark | None = None) -> QuerySet[Run]:
    runs = Run.objects.select_related("benchmark", "endpoint", "judge", "human").order_by(
        "-created_at", "-pk"
    )
    return runs.filter(benchmark=benchmark) if benchmark else runs


def run_get(*, pk: int) -> Run:
    return Run.objects.select_related("benchmark", "endpoint", "judge", "human").get(pk=pk)


def run_items(
    *, benchmark: Benchmark, filters: dict[str, Any], limited: bool = True
) -> QuerySet[Item]:
    """The items a run with these (clean) filters covers, in index order (its limit applied
    unless `limited` is False: a chunk's index range already stops where the limit did)."""
    items = Item.objects.filter(benchmark=benchmark)
    for key, values in filters.items():
        if key == "limit":
            continue
        if key == "status":
            # "curated" is a shorthand for the statuses that go into releases.
            expanded = {s for v in values for s in (CURATED_STATUSES if v == "curated" else (v,))}
            items = items.filter(status__in=expanded)
        else:
            items = items.filter(**{f"{key}__in": values})
    items = items.order_by("source_index")
    limit = filters.get("limit") if limited else None
    return items[:limit] if limit else items


def chunk_pending_items(*, chunk: RunChunk, run: Run) -> list[Item]:
    """The chunk's items that have no prediction yet, with their images, in index order."""
    items = run_items(benchmark=run.benchmark, filters=run.filters, limited=False)
    answered = Prediction.objects.filter(run_id=run.pk, item_id=OuterRef("pk"))
    return list(
        items.filter(source_index__range=(chunk.first_index, chunk.last_index))
        .exclude(Exists(answered))
        .select_related("case__endoscopy_image")
        .prefetch_related("item_images__image", "case__volumes", "case__indicators")
    )


def run_has_active_chunks(*, run_id: int) -> bool:
    return RunChunk.objects.filter(
        run_id=run_id, status__in=(RunStatus.QUEUED, RunStatus.RUNNING)
    ).exists()


@dataclass
class ChunkStrip:
    """A run's chunks for its progress strip: counts by status and one cell per chunk (or per
    group of neighbouring chunks when there are more than fit)."""

    counts: dict[str, int]
    cells: list[dict[str, Any]]
    per_cell: int
    recovered: int  # chunks put back in the queue after their worker died

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# A group of chunks shows its most telling state: a failure first, then work under way.
_CELL_ORDER = (RunStatus.FAILED, RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.CANCELLED)


def run_chunk_strip(*, run: Run, cells: int = 240) -> ChunkStrip:
    """One query: every chunk's state, folded into at most `cells` cells in run order."""
    rows = list(
        RunChunk.objects.filter(run_id=run.pk)
        .order_by("number")
        .values_list("number", "status", "completed", "size", "recoveries")
    )
    counts = dict.fromkeys(RunStatus.values, 0)
    for row in rows:
        counts[row[1]] += 1
    per_cell = max(1, math.ceil(len(rows) / cells))
    strip: list[dict[str, Any]] = []
    for start in range(0, len(rows), per_cell):
        group = rows[start : start + per_cell]
        statuses = {row[1] for row in group}
        state = next((s for s in _CELL_ORDER if s in statuses), RunStatus.DONE)
        if state == RunStatus.QUEUED and RunStatus.DONE in statuses:
            state = RunStatus.RUNNING  # a group half done is under way
        strip.append(
            {
                "first": group[0][0] + 1,
                "last": group[-1][0] + 1,
                "status": state,
                "label": RunStatus(state).label,
                "completed": sum(row[2] for row in group),
                "size": sum(row[3] for row in group),
            }
        )
        cell = strip[-1]
        cell["percent"] = round(100 * cell["completed"] / cell["size"]) if cell["size"] else 0
    return ChunkStrip(counts, strip, per_cell, sum(1 for row in rows if row[4]))


def run_predictions(
    *,
    run: Run,
    wrong_only: bool = False,
    unmatched_only: bool = False,
    field_name: str = "",
    value: str = "",
) -> QuerySet[Prediction]:
    """The run's predictions with their items, filtered (wrong only, replies VLMEvalKit's exact
    matching read nothing in, one field's value)."""
    predictions = Prediction.objects.filter(run=run).select_related("item")
    if wrong_only:
        predictions = predictions.exclude(hit=True)
    if unmatched_only:
        predictions = predictions.filter(vlmeval_letter="", error="")
    if field_name in SUMMARY_FIELDS and value:
        predictions = predictions.filter(**{f"item__{field_name}": value})
    return predictions.order_by("item__source_index")


@dataclass
class VlmevalTable:
    """VLMEvalKit's own table of a run, as its log prints it: a header and rows of cells."""

    commit: str
    header: list[str]
    rows: list[list[Any]]


def run_vlmeval_table(run: Run) -> VlmevalTable | None:
    """The run's VLMEvalKit table from its summary (no query): `report_acc`'s rows by split, or
    MedQ-DEG's score dict as one row."""
    vlmeval = (run.summary or {}).get("vlmeval") or {}
    if not vlmeval.get("rows"):
        return None
    return VlmevalTable(vlmeval["commit"], vlmeval["header"], vlmeval["rows"])


def run_field_values(run: Run) -> dict[str, list[str]]:
    """The values of each field this run covers, read from its summary (no query)."""
    by = (run.summary or {}).get("by", {})
    return {name: sorted(by[name]) for name in SUMMARY_FIELDS if by.get(name)}


# --- leaderboard ---------------------------------------------------------------------------


@dataclass
class LeaderboardRow:
    run: Run
    overall: dict[str, Any]
    cells: list[dict[str, Any] | None]
    # MedQ-DEG's findings (`selectors.calibration`): ECE, over-confidence on severe items, cliffs.
    ece: float | None = None
    severe_gap: float | None = None
    cliffs: int | None = None


def _findings(run: Run) -> dict[str, Any]:
    summary = run.summary or {}
    calibration = summary.get("calibration") or {}
    severe = ((calibration.get("by") or {}).get("severity") or {}).get("severe") or {}
    cliffs = summary.get("cliffs")
    return {
        "ece": (calibration.get("overall") or {}).get("ece"),
        "severe_gap": severe.get("gap"),
        "cliffs": sum(1 for r in cliffs.get("rows") or [] if r["cliff"])
        if cliffs and cliffs.get("rows")
        else None,
    }


@dataclass
class Leaderboard:
    benchmark: Benchmark
    fields: list[str]
    field: str
    columns: list[str]
    rows: list[LeaderboardRow]
    sort: str
    # `dataclasses.field`: the `field` attribute above shadows the name in the class body.
    chart: dict[str, Any] = dataclasses.field(default_factory=dict)
    calibrated: bool = False  # some run has a confidence or twins: show the findings' columns


def _accuracy_key(cell: dict[str, Any] | None) -> float:
    if not cell or cell.get("accuracy") is None:
        return -1.0
    return float(cell["accuracy"])


def leaderboard(*, benchmark: Benchmark, field_name: str = "", sort: str = "") -> Leaderboard:
    """Finished runs (models, baselines, humans) as rows, one field's values as columns.

    One query whatever the number of items: every number comes from each run's summary.
    """
    runs = list(
        Run.objects.filter(benchmark=benchmark, status__in=LEADERBOARD_STATUSES)
        .select_related("endpoint")
        .order_by("pk")
    )
    runs = [run for run in runs if (run.summary or {}).get("overall")]
    present = {name for run in runs for name, values in run.summary.get("by", {}).items() if values}
    fields = [name for name in SUMMARY_FIELDS if name in present]
    chosen = field_name if field_name in fields else ("category" if "category" in fields else "")
    chosen = chosen or (fields[0] if fields else "")
    columns = sorted({value for run in runs for value in run.summary["by"].get(chosen, {})})
    rows = [
        LeaderboardRow(
            run=run,
            overall=run.summary["overall"],
            cells=[run.summary["by"].get(chosen, {}).get(column) for column in columns],
            **_findings(run),
        )
        for run in runs
    ]
    sort = sort if sort in columns or sort == "label" else "overall"
    if sort == "label":
        rows.sort(key=lambda row: row.run.label.lower())
    elif sort == "overall":
        rows.sort(key=lambda row: -_accuracy_key(row.overall))
    else:
        position = columns.index(sort)
        rows.sort(key=lambda row: -_accuracy_key(row.cells[position]))
    board = Leaderboard(benchmark, fields, chosen, columns, rows, sort)
    board.calibrated = any(row.ece is not None or row.cliffs is not None for row in rows)
    board.chart = accuracy_chart([(row.run.label, row.overall) for row in rows])
    return board


# --- scores per task -----------------------------------------------------------------------

TASKS = ("vqa", "classification", "report_generation", "localization", "retrieval")
# An item's kind decides its task.
TASK_OF_KIND = {
    ItemKind.MCQ: "vqa",
    ItemKind.LABEL: "classification",
    ItemKind.OPEN: "report_generation",
    ItemKind.BOX: "localization",
    ItemKind.RETRIEVAL: "retrieval",
}
TASK_METRICS: dict[str, tuple[str, ...]] = {
    "vqa": ("accuracy",),
    "classification": ("accuracy", "macro_f1", "macro_f1_no_support"),
    "report_generation": ("rouge_l", "bleu4"),
    # Our VOC AP beside the field's COCO figures (pycocotools, over every slice asked).
    "localization": ("mean_iou", "ap50", "coco_ap50", "coco_ap", "slice_iou"),
    "retrieval": ("recall_at_1", "recall_at_5", "recall_at_10", "median_rank"),
}
# Lower is better only for the median rank.
_ASCENDING = {"median_rank"}
# Breakdowns shown under a task's scores: (key in its block, what each entry is).
_TASK_PARTS = {
    "classification": "by_field",
    "report_generation": "by_kind",
    "localization": "by_dimension",
}


@dataclass
class MetricCell:
    name: str
    value: float | None
    low: float | None
    high: float | None
    n: int


@dataclass
class TaskScores:
    task: str
    n: int
    metrics: list[MetricCell]
    parts: list[tuple[str, list[MetricCell]]] = field(default_factory=list)
    confusions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _cells(block: dict[str, Any], names: tuple[str, ...]) -> list[MetricCell]:
    cells = []
    for name in names:
        metric = block.get(name) or {}
        low, high = (metric.get("ci95") or [None, None])[:2]
        cells.append(MetricCell(name, metric.get("value"), low, high, metric.get("n") or 0))
    return cells


def run_task_scores(run: Run) -> list[TaskScores]:
    """The run's scores per task it has items of, read from its summary (no query)."""
    tasks = (run.summary or {}).get("tasks") or {}
    counts = tasks.get("counts") or {}
    found = []
    for task in TASKS:
        block = tasks.get(task) or {}
        if not counts.get(task):
            continue
        names = TASK_METRICS[task]
        scores = TaskScores(task, counts[task], _cells(block, names))
        part_key = _TASK_PARTS.get(task)
        for name, part in (block.get(part_key) or {}).items() if part_key else ():
            scores.parts.append((name, _cells(part, names)))
            if part.get("confusion"):
                scores.confusions.append((name, _confusion_rows(part["confusion"])))
        if task == "localization" and block.get("by_slice"):
            scores.parts.append(("2d per slice", _cells(block["by_slice"], names)))
        if task == "retrieval":
            for direction in ("report_to_case", "case_to_report"):
                if block.get(direction):
                    scores.parts.append((direction, _cells(block[direction], names)))
        found.append(scores)
    return found


def _confusion_rows(confusion: dict[str, Any]) -> dict[str, Any]:
    """A confusion matrix as table rows: counts by predicted label, then the unlisted ones."""
    labels, unlisted = confusion["labels"], confusion.get("unlisted") or []
    show_unlisted = any(unlisted)
    rows = []
    for position, (label, counts) in enumerate(zip(labels, confusion["matrix"], strict=True)):
        cells = [{"n": n, "diagonal": i == position} for i, n in enumerate(counts)]
        if show_unlisted:
            cells.append({"n": unlisted[position], "diagonal": False})
        rows.append({"label": label, "counts": cells})
    return {"labels": labels, "unlisted": show_unlisted, "rows": rows}


@dataclass
class TaskBoard:
    task: str
    metrics: tuple[str, ...]
    rows: list[tuple[Run, list[MetricCell]]]
    sort: str


def task_leaderboard(*, benchmark: Benchmark, task: str, sort: str = "") -> TaskBoard:
    """Finished runs that answered items of `task`, one row each, its metrics as columns,
    sorted by `sort` (best first; the first metric by default). One query."""
    metrics = TASK_METRICS[task]
    sort = sort if sort in metrics else metrics[0]
    rows = []
    runs = Run.objects.filter(benchmark=benchmark, status__in=LEADERBOARD_STATUSES).select_related(
        "endpoint"
    )
    for run in runs.order_by("pk"):
        tasks = (run.summary or {}).get("tasks") or {}
        # A run that answered none of the task's items (a baseline cannot draw a box) is not
        # ranked on it.
        if (tasks.get("counts") or {}).get(task) and (tasks.get("answered") or {}).get(task):
            rows.append((run, _cells(tasks.get(task) or {}, metrics)))
    position = metrics.index(sort)

    def key(row: tuple[Run, list[MetricCell]]) -> float:
        value = row[1][position].value
        if value is None:
            return math.inf
        return value if sort in _ASCENDING else -value

    rows.sort(key=key)
    return TaskBoard(task, metrics, rows, sort)


def benchmark_tasks(benchmark: Benchmark) -> list[str]:
    """The tasks the benchmark has items of (one query for a Gastric-X benchmark; the other
    families' items are multiple choice)."""
    if benchmark.family != Family.GASTRICX:
        return ["vqa"]
    kinds = set(
        Item.objects.filter(benchmark=benchmark)
        .order_by()
        .values_list("kind", flat=True)
        .distinct()
    )
    return [task for kind, task in TASK_OF_KIND.items() if kind in kinds]
