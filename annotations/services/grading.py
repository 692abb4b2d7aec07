"""Blinded side-by-side grading of two runs' answers by clinicians."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from annotations.models import Grade, GradingSession, Item, Prediction, Preference, Run, RunStatus
from annotations.services.errors import DomainError

RUBRIC_CRITERIA = ("completeness", "preciseness", "consistency", "accuracy")
RUBRIC_SCORES = (0, 1, 2)
SIDES = ("left", "right")


@transaction.atomic
def grading_session_create(*, run_a: Run, run_b: Run, created_by: Any) -> GradingSession:
    """A session comparing two finished runs of one benchmark, item by item."""
    if run_a.pk == run_b.pk:
        raise DomainError(_("Pick two different runs."))
    if run_a.benchmark_id != run_b.benchmark_id:
        raise DomainError(_("Both runs must be on the same benchmark."))
    if RunStatus.QUEUED in (run_a.status, run_b.status):
        raise DomainError(_("Both runs must have started."))
    return GradingSession.objects.create(run_a=run_a, run_b=run_b, created_by=created_by)


def grade_run_a_on_left(*, session: GradingSession, item: Item, grader: Any) -> bool:
    """Whether run A is shown on the left for this (session, item, grader).

    A hash, not a stored draw: a reload shows the same sides, every grader gets their own
    order, and nothing about the order can be read from the page.
    """
    key = f"clinreview-grading:{session.pk}:{item.pk}:{grader.pk}".encode()
    return hashlib.sha256(key).digest()[0] % 2 == 0


def grade_sides(
    *, session: GradingSession, item: Item, grader: Any, predictions: dict[int, Prediction]
) -> tuple[Prediction, Prediction]:
    """(left, right) predictions for this grader, from `{run_id: prediction}` of the item."""
    a, b = predictions[session.run_a_id], predictions[session.run_b_id]
    return (a, b) if grade_run_a_on_left(session=session, item=item, grader=grader) else (b, a)


def _rubric_clean(rubric: dict[str, Any] | None) -> dict[str, dict[str, int]]:
    cleaned: dict[str, dict[str, int]] = {}
    for side, scores in (rubric or {}).items():
        if side not in SIDES or not isinstance(scores, dict):
            raise DomainError(_("Rubric sides are left and right."))
        for criterion, score in scores.items():
            if criterion not in RUBRIC_CRITERIA:
                raise DomainError(_("Unknown rubric criterion: %(name)s.") % {"name": criterion})
            if score in (None, ""):
                continue
            try:
                value = int(score)
            except (TypeError, ValueError):
                value = -1
            if value not in RUBRIC_SCORES:
                raise DomainError(_("Rubric scores are 0, 1 or 2."))
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
    predictions = {
        p.run_id: p
        for p in Prediction.objects.filter(
            item=item, run_id__in=(session.run_a_id, session.run_b_id)
        )
    }
    if len(predictions) < 2:
        raise DomainError(_("Both runs must have answered this item."))
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
                rubric=_rubric_clean(rubric),
                seconds_spent=seconds_spent,
            )
    except IntegrityError:
        raise DomainError(_("You have already graded this item."), code="already_graded") from None
