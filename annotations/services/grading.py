"""Blinded side-by-side grading of two runs' answers by clinicians; of generated reports, two
models' or a model's beside the reference report, with a report rubric."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from annotations.models import (
    Grade,
    GradingSession,
    GradingTask,
    Item,
    ItemKind,
    Prediction,
    Preference,
    Run,
    RunStatus,
)
from annotations.selectors.grading import grading_item_predictions, written_by
from annotations.services.errors import DomainError

RUBRIC_CRITERIA = ("completeness", "preciseness", "consistency", "accuracy")
RUBRIC_SCORES = (0, 1, 2)
# A generated report: how many findings it gets right, misses and makes up (3: three or more),
# and an overall grade from 1 (unusable) to 5 (as a radiologist would write it).
REPORT_CRITERIA = ("correct_findings", "omissions", "hallucinations", "overall")
REPORT_SCORES: dict[str, tuple[int, ...]] = {
    "correct_findings": (0, 1, 2, 3),
    "omissions": (0, 1, 2, 3),
    "hallucinations": (0, 1, 2, 3),
    "overall": (1, 2, 3, 4, 5),
}
SIDES = ("left", "right")


def rubric_scores(session: GradingSession) -> dict[str, tuple[int, ...]]:
    """The session's rubric: each criterion and the scores it takes."""
    if session.task == GradingTask.REPORTS:
        return REPORT_SCORES
    return dict.fromkeys(RUBRIC_CRITERIA, RUBRIC_SCORES)


@transaction.atomic
def grading_session_create(
    *, run_a: Run, run_b: Run | None, created_by: Any, task: str = "", graders: Any = None
) -> GradingSession:
    """A session comparing two started runs of one benchmark, item by item; a report session
    (`task="report_generation"`) compares their generated reports, or, without run B, run A's
    reports with the reference reports. `graders`: the clinicians who grade it (none: every
    clinician in the benchmark's scope)."""
    if task not in GradingTask.values:
        raise DomainError(_("Unknown grading task."))
    if run_b is None and task != GradingTask.REPORTS:
        raise DomainError(_("Only reports can be graded against the reference: pick run B."))
    if run_b is not None and run_a.pk == run_b.pk:
        raise DomainError(_("Pick two different runs."))
    if run_b is not None and run_a.benchmark_id != run_b.benchmark_id:
        raise DomainError(_("Both runs must be on the same benchmark."))
    if RunStatus.QUEUED in (run_a.status, run_b.status if run_b else None):
        raise DomainError(_("Both runs must have started."))
    if (
        task == GradingTask.REPORTS
        and not Prediction.objects.filter(run=run_a, item__kind=ItemKind.OPEN, error="").exists()
    ):
        raise DomainError(_("Run A has generated no report."))
    session = GradingSession.objects.create(
        run_a=run_a, run_b=run_b, task=task, created_by=created_by
    )
    if graders:
        session.graders.set(graders)
    return session


def grade_run_a_on_left(*, session: GradingSession, item: Item, grader: Any) -> bool:
    """Whether run A is shown on the left for this (session, item, grader).

    A hash, not a stored draw: a reload shows the same sides, every grader gets their own
    order, and nothing about the order can be read from the page.
    """
    key = f"clinreview-grading:{session.pk}:{item.pk}:{grader.pk}".encode()
    return hashlib.sha256(key).digest()[0] % 2 == 0


def grade_sides(
    *, session: GradingSession, item: Item, grader: Any, predictions: dict[int, Prediction]
) -> tuple[Prediction | None, Prediction | None]:
    """(left, right) predictions for this grader, from `{run_id: prediction}` of the item; None
    stands for the item's reference report (a session without run B)."""
    a = predictions[session.run_a_id]
    b = predictions[session.run_b_id] if session.run_b_id else None
    return (a, b) if grade_run_a_on_left(session=session, item=item, grader=grader) else (b, a)


def _rubric_clean(
    rubric: dict[str, Any] | None, scales: dict[str, tuple[int, ...]]
) -> dict[str, dict[str, int]]:
    cleaned: dict[str, dict[str, int]] = {}
    for side, scores in (rubric or {}).items():
        if side not in SIDES or not isinstance(scores, dict):
            raise DomainError(_("Rubric sides are left and right."))
        for criterion, score in scores.items():
            if criterion not in scales:
                raise DomainError(_("Unknown rubric criterion: %(name)s.") % {"name": criterion})
            if score in (None, ""):
                continue
            try:
                value = int(score)
            except (TypeError, ValueError):
                value = -1
            allowed = scales[criterion]
            if value not in allowed:
                raise DomainError(
                    _("%(name)s takes a score from %(low)d to %(high)d.")
                    % {"name": criterion, "low": allowed[0], "high": allowed[-1]}
                )
            cleaned.setdefault(side, {})[criterion] = value
    return cleaned


@transaction.atomic
def grade_submit(
    *,
    session: GradingSession,
    item: Item,
    grader: Any,
    preference: str,
    rubric: dict[str, Any] | None = None,
    seconds_spent: float | None = None,
) -> Grade:
    """Record a grader's preference and rubric for one item; the sides are recomputed here.

    The client never says which run was where: it only says left or right, and the server
    derives the sides from the same hash that drew the page.
    """
    if preference not in Preference.values:
        raise DomainError(_("Choose A, B, tie or both wrong."))
    predictions = grading_item_predictions(session=session, item=item)
    if len(predictions) < (2 if session.run_b_id else 1):
        raise DomainError(_("Both runs must have answered this item."))
    if session.task == GradingTask.REPORTS and item.kind != ItemKind.OPEN:
        raise DomainError(_("This session grades generated reports only."))
    if session.run_b_id is None and Item.objects.filter(written_by(grader), pk=item.pk).exists():
        raise DomainError(_("You wrote this item's reference: another clinician grades it."))
    left, right = grade_sides(session=session, item=item, grader=grader, predictions=predictions)
    try:
        with transaction.atomic():
            return Grade.objects.create(
                session=session,
                item=item,
                grader=grader,
                left_prediction=left,
                right_prediction=right,
                preference=preference,
                rubric=_rubric_clean(rubric, rubric_scores(session)),
                seconds_spent=seconds_spent,
            )
    except IntegrityError:
        raise DomainError(_("You have already graded this item."), code="already_graded") from None
