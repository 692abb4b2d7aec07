"""Reads for runs, leaderboards and grading: listings, predictions, ratings."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotations.charts import accuracy_chart, rating_chart
from annotations.models import (
    CURATED_STATUSES,
    TAXONOMY_FIELDS,
    Benchmark,
    Grade,
    GradingSession,
    Item,
    Prediction,
    Preference,
    Run,
    RunChunk,
    RunStatus,
)
from annotations.scoring import (
    bootstrap_intervals,
    bradley_terry,
    percent_agreement,
    weighted_kappa,
    win_rate_matrix,
)
from annotations.selectors.visibility import in_scope

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
        .prefetch_related("item_images__image")
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
    strip = []
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


@dataclass
class Leaderboard:
    benchmark: Benchmark
    fields: list[str]
    field: str
    columns: list[str]
    rows: list[LeaderboardRow]
    sort: str
    chart: dict[str, Any] = field(default_factory=dict)


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
    board.chart = accuracy_chart([(row.run.label, row.overall) for row in rows])
    return board


# --- grading -------------------------------------------------------------------------------


def grading_shared_items(session: GradingSession) -> QuerySet[Item]:
    """Items both runs answered without an error, in index order."""
    answered_a = Prediction.objects.filter(run_id=session.run_a_id, error="").values("item_id")
    answered_b = Prediction.objects.filter(run_id=session.run_b_id, error="").values("item_id")
    return (
        Item.objects.filter(pk__in=answered_a)
        .filter(pk__in=answered_b)
        .order_by("source_index", "pk")
    )


@dataclass
class GradingProgress:
    session: GradingSession
    total: int
    graded: int

    @property
    def percent(self) -> float:
        return 100.0 * self.graded / self.total if self.total else 0.0


def grading_sessions(*, viewer: Any, grader: Any = None) -> list[GradingProgress]:
    """Sessions in `viewer`'s scope with their shared items and how many `grader` (or anyone)
    has graded."""
    # Items both runs answered, counted in the same query as the sessions (no query per row).
    answered_b = Prediction.objects.filter(run_id=OuterRef(OuterRef("run_b_id")), error="")
    shared = (
        Prediction.objects.filter(run_id=OuterRef("run_a_id"), error="")
        .filter(item_id__in=answered_b.values("item_id"))
        .order_by()
        .values("run_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    graded_filter = Q(grades__grader=grader) if grader is not None else Q()
    sessions = (
        in_scope(GradingSession.objects.all(), viewer, benchmark_path="run_a__benchmark")
        .select_related("run_a__benchmark", "run_b")
        .annotate(
            graded=Count("grades", filter=graded_filter),
            shared=Coalesce(Subquery(shared, output_field=IntegerField()), 0),
        )
        .order_by("-pk")
    )
    return [GradingProgress(session, session.shared, session.graded) for session in sessions]


def grading_progress(*, session: GradingSession, grader: Any) -> GradingProgress:
    graded = Grade.objects.filter(session=session, grader=grader).count()
    return GradingProgress(session, grading_shared_items(session).count(), graded)


def grading_next_item(*, session: GradingSession, grader: Any) -> Item | None:
    """The first shared item this grader has not graded yet, with its images."""
    graded = Grade.objects.filter(session=session, grader=grader).values("item_id")
    return (
        grading_shared_items(session)
        .exclude(pk__in=graded)
        .select_related("benchmark")
        .prefetch_related("item_images__image")
        .first()
    )


def grading_item_predictions(*, session: GradingSession, item: Item) -> dict[int, Prediction]:
    rows = Prediction.objects.filter(item=item, run_id__in=(session.run_a_id, session.run_b_id))
    return {prediction.run_id: prediction for prediction in rows}


def run_display_name(run: Run) -> str:
    return f"#{run.pk} {run.label}"


def _outcome(preference: str) -> float:
    if preference == Preference.LEFT:
        return 1.0
    if preference == Preference.RIGHT:
        return 0.0
    return 0.5  # a tie, and "both wrong" (neither is better: Chatbot Arena's tie (bothbad))


@dataclass
class Ratings:
    ratings: list[dict[str, Any]]
    models: list[str]
    win_rates: list[dict[str, Any]]
    agreement: dict[str, Any]
    comparisons: int
    chart: dict[str, Any]


def grading_ratings(*, benchmark: Benchmark | None = None, n_boot: int = 500) -> Ratings:
    """Bradley–Terry ratings with bootstrap 95% intervals, win rates and clinician agreement."""
    grades = Grade.objects.select_related(
        "left_prediction__run", "right_prediction__run", "session"
    ).order_by("pk")
    if benchmark is not None:
        grades = grades.filter(session__run_a__benchmark=benchmark)
    grades = list(grades)
    comparisons = [
        (
            run_display_name(grade.left_prediction.run),
            run_display_name(grade.right_prediction.run),
            _outcome(grade.preference),
        )
        for grade in grades
    ]
    scores = bradley_terry(comparisons)
    intervals = bootstrap_intervals(comparisons, n_boot=n_boot, seed=0)
    ordered = sorted(scores, key=lambda name: -scores[name])
    ratings = [
        {
            "model": name,
            "rating": scores[name],
            "low": intervals[name][0],
            "high": intervals[name][1],
        }
        for name in ordered
    ]
    matrix = win_rate_matrix(comparisons)
    win_rates = [
        {"model": name, "cells": [matrix.get(name, {}).get(other) for other in ordered]}
        for name in ordered
    ]
    return Ratings(
        ratings,
        ordered,
        win_rates,
        grading_agreement(grades),
        len(comparisons),
        rating_chart(ratings),
    )


def _preference_for_run_a(grade: Grade, run_a_id: int) -> str:
    """The grade's preference told from run A's side: "a", "b", "tie" or "both_wrong"."""
    a_on_left = grade.left_prediction.run_id == run_a_id
    if grade.preference == Preference.LEFT:
        return "a" if a_on_left else "b"
    if grade.preference == Preference.RIGHT:
        return "b" if a_on_left else "a"
    return grade.preference


def grading_agreement(grades: list[Grade]) -> dict[str, Any]:
    """Agreement between clinicians on items graded by two or more of them.

    Every pair of graders of an item is one unit. Weighted (linear) kappa orders the outcome
    from run A's side (B better < tie < A better; "both wrong" sits with tie, since neither
    answer is preferred); percent agreement compares the four raw choices.
    """
    by_item: dict[tuple[int, int], list[Grade]] = defaultdict(list)
    for grade in grades:
        by_item[grade.session_id, grade.item_id].append(grade)
    first: list[str] = []
    second: list[str] = []
    for (_session, _item), item_grades in by_item.items():
        run_a_id = item_grades[0].session.run_a_id
        labels = [_preference_for_run_a(grade, run_a_id) for grade in item_grades]
        for x, y in itertools.combinations(labels, 2):
            first.append(x)
            second.append(y)
    if not first:
        return {"pairs": 0, "kappa": None, "percent": None}

    def ordinal(label: str) -> str:
        return "tie" if label == "both_wrong" else label

    kappa = weighted_kappa(
        [ordinal(x) for x in first], [ordinal(y) for y in second], ["b", "tie", "a"]
    )
    return {
        "pairs": len(first),
        "kappa": None if math.isnan(kappa) else kappa,
        "percent": percent_agreement(zip(first, second, strict=True)),
    }
