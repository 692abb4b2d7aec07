"""Reads for blinded side-by-side grading: sessions and their progress, the next item to grade,
and the ratings (Bradley–Terry, win rates, clinicians' agreement) the grades give."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import (
    Case,
    Count,
    Exists,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    When,
)
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _

from annotations.access import ADJUDICATOR, REVIEWER
from annotations.charts import rating_chart
from annotations.models import (
    Adjudication,
    Benchmark,
    Grade,
    GradingSession,
    GradingTask,
    Item,
    ItemKind,
    ItemRevision,
    Prediction,
    Preference,
    Review,
    Run,
)
from annotations.scoring import (
    bootstrap_intervals,
    bradley_terry,
    percent_agreement,
    weighted_kappa,
    win_rate_matrix,
)
from annotations.selectors.visibility import gradable_by, in_scope


def grading_shared_items(session: GradingSession) -> QuerySet[Item]:
    """Items both runs answered without an error (a report session: their generated reports;
    against the reference: run A's reports of items with a reference), in index order."""
    answered_a = Prediction.objects.filter(run_id=session.run_a_id, error="").values("item_id")
    items = Item.objects.filter(pk__in=answered_a)
    if session.run_b_id:
        answered_b = Prediction.objects.filter(run_id=session.run_b_id, error="")
        items = items.filter(pk__in=answered_b.values("item_id"))
    else:
        items = items.exclude(reference="")
    if session.task == GradingTask.REPORTS:
        items = items.filter(kind=ItemKind.OPEN)
    return items.order_by("source_index", "pk")


def written_by(grader: Any) -> Q:
    """Items whose text `grader` wrote: a new version they made (an edit, an adjudication or a
    curator's revision), or an edit they proposed in a review."""
    return Q(
        Exists(ItemRevision.objects.filter(item=OuterRef("pk"), author=grader, version__gt=1))
        | Exists(Adjudication.objects.filter(item=OuterRef("pk"), adjudicator=grader))
        | Exists(Review.objects.filter(item=OuterRef("pk"), reviewer=grader, verdict="edit"))
    )


def grading_items_for(session: GradingSession, grader: Any) -> QuerySet[Item]:
    """The shared items `grader` grades: against the reference, never an item whose reference
    is (in part) their own text, since one side of the page would be their own writing."""
    items = grading_shared_items(session)
    if session.run_b_id is None:
        items = items.exclude(written_by(grader))
    return items


def grader_choices() -> QuerySet:
    """The clinicians a curator may name as graders: reviewers and adjudicators, by name."""
    users = get_user_model().objects.filter(groups__name__in=[REVIEWER, ADJUDICATOR])
    return users.distinct().order_by("username")


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
    # Items both runs answered, counted in the same query as the sessions (no query per row):
    # of every kind or reports only, against run B or against the reference.
    answered_b = Prediction.objects.filter(run_id=OuterRef(OuterRef("run_b_id")), error="")
    answered_a = Prediction.objects.filter(run_id=OuterRef("run_a_id"), error="")

    def count(predictions: QuerySet[Prediction]) -> Coalesce:
        counted = predictions.order_by().values("run_id").annotate(n=Count("pk")).values("n")
        return Coalesce(Subquery(counted, output_field=IntegerField()), 0)

    paired = answered_a.filter(item_id__in=answered_b.values("item_id"))
    reports = Q(item__kind=ItemKind.OPEN)
    shared = Case(
        When(
            run_b__isnull=True, then=count(answered_a.filter(reports).exclude(item__reference=""))
        ),
        When(task=GradingTask.REPORTS, then=count(paired.filter(reports))),
        default=count(paired),
    )
    graded_filter = Q(grades__grader=grader) if grader is not None else Q()
    scoped = in_scope(GradingSession.objects.all(), viewer, benchmark_path="run_a__benchmark")
    if grader is not None:
        scoped = gradable_by(scoped, grader)
    sessions = (
        scoped.select_related("run_a__benchmark", "run_b")
        .annotate(graded=Count("grades", filter=graded_filter), shared=shared)
        .order_by("-pk")
    )
    return [GradingProgress(session, session.shared, session.graded) for session in sessions]


def grading_progress(*, session: GradingSession, grader: Any) -> GradingProgress:
    graded = Grade.objects.filter(session=session, grader=grader).count()
    return GradingProgress(session, grading_items_for(session, grader).count(), graded)


def grading_next_item(*, session: GradingSession, grader: Any) -> Item | None:
    """The first shared item this grader has not graded yet, with its images."""
    graded = Grade.objects.filter(session=session, grader=grader).values("item_id")
    return (
        grading_items_for(session, grader)
        .exclude(pk__in=graded)
        .select_related("benchmark")
        .prefetch_related("item_images__image")
        .first()
    )


def grading_item_predictions(*, session: GradingSession, item: Item) -> dict[int, Prediction]:
    runs = [run_id for run_id in (session.run_a_id, session.run_b_id) if run_id]
    rows = Prediction.objects.filter(item=item, run_id__in=runs)
    return {prediction.run_id: prediction for prediction in rows}


def run_display_name(run: Run | None) -> str:
    """A run's name on the ratings page; None is the reference reports (a player too)."""
    return str(_("Reference reports")) if run is None else f"#{run.pk} {run.label}"


def _side_run(prediction: Prediction | None) -> Run | None:
    return prediction.run if prediction is not None else None


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


def grading_ratings(
    *, benchmark: Benchmark | None = None, task: str | None = None, n_boot: int = 500
) -> Ratings:
    """Bradley–Terry ratings with bootstrap 95% intervals, win rates and clinician agreement
    (`task`: only the grades of sessions of that task, e.g. generated reports)."""
    rows = Grade.objects.select_related(
        "left_prediction__run", "right_prediction__run", "session"
    ).order_by("pk")
    if benchmark is not None:
        rows = rows.filter(session__run_a__benchmark=benchmark)
    if task is not None:
        rows = rows.filter(session__task=task)
    grades = list(rows)
    comparisons = [
        (
            run_display_name(_side_run(grade.left_prediction)),
            run_display_name(_side_run(grade.right_prediction)),
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
    # Run A is the side with its prediction (the other may be the reference: no prediction).
    left = grade.left_prediction
    a_on_left = left is not None and left.run_id == run_a_id
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
