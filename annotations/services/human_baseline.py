"""Human baseline: a clinician answers items without the gold answer; the answers form a Run.

The run has kind "human" and one Prediction per answered item (extracted letter and hit; a
classification item's label too), so leaderboards and the per-task scores read it exactly like
a model's run.

A clinician answers choices: a multiple-choice item's options, a classification item's label
set lettered as a model is asked it. The other kinds of a Gastric-X benchmark are left out of
the session, and the page says so (`LEFT_OUT_REASONS`): scoring them as wrong would be false,
and no fair answer form exists for them here.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from annotations.access import ADJUDICATOR, REVIEWER, has_role
from annotations.models import Benchmark, Item, ItemKind, Prediction, Run, RunKind, RunStatus
from annotations.selectors.review import (
    BASELINE_FILTERS,
    baseline_items,
    baseline_left_out,
    baseline_progress,
)
from annotations.services.errors import DomainError
from annotations.services.runs import run_cancel, run_finish
from annotations.services.runs.tasks import choice_options

# Why a kind is not asked in a human baseline (shown beside the session).
LEFT_OUT_REASONS = {
    ItemKind.OPEN: gettext_lazy(
        "a report is written from the whole case and scored by ROUGE/BLEU against another "
        "clinician's wording, which measures phrasing more than reading; reports are graded "
        "by clinicians instead"
    ),
    ItemKind.BOX: gettext_lazy(
        "a target box is drawn on the CT volume with the box tools of review; the reviewed "
        "boxes are already the clinicians' answer"
    ),
    ItemKind.RETRIEVAL: gettext_lazy(
        "retrieval ranks every case of the benchmark for each report; every pair shown is a "
        "true pair, so a yes or no on one pair measures nothing"
    ),
}


def baseline_options(item: Item, label_sets: dict | None) -> list[tuple[str, str]]:
    """The lettered choices a clinician answers `item` with: its options, or for a
    classification item its benchmark's label set as the letters a model is asked (none
    without a usable label set)."""
    if item.kind == ItemKind.LABEL:
        try:
            options, _gold = choice_options(item, label_sets or {})
        except ValueError:  # no label set, or one past the letters (refused at import)
            return []
        return list(options.items())
    return item.lettered_options


def baseline_left_out_notes(run: Run) -> list[dict]:
    """The kinds of the session's selection that it does not ask: kind, count and why."""
    counts = baseline_left_out(run)
    return [
        {"kind": ItemKind(kind).label, "count": counts[kind], "why": LEFT_OUT_REASONS[kind]}
        for kind in LEFT_OUT_REASONS
        if counts.get(kind)
    ]


@transaction.atomic
def human_baseline_open(
    *,
    benchmark: Benchmark,
    clinician,
    opened_by,
    filters: dict | None = None,
    limit: int | None = None,
    item_ids: list[int] | None = None,
) -> Run:
    """Open a human-baseline session for `clinician` over the filtered items (first `limit`;
    only `item_ids` when given: another session's items)."""
    if not has_role(clinician, REVIEWER, ADJUDICATOR):
        raise DomainError(_("A human baseline is answered by a reviewer or an adjudicator."))
    filters = {k: v for k, v in (filters or {}).items() if k in BASELINE_FILTERS and v}
    run = Run(benchmark=benchmark, kind=RunKind.HUMAN, human=clinician, filters=filters)
    if item_ids:
        run.filters = {**filters, "item_ids": list(item_ids)}
    ids = list(baseline_items(run).values_list("pk", flat=True)[: limit or None])
    if not ids:
        if baseline_left_out(run):
            raise DomainError(
                _(
                    "No item of this selection can be answered in a human baseline: reports, "
                    "boxes and retrieval pairs are left out."
                )
            )
        raise DomainError(_("No item matches this selection."))
    if limit or item_ids:
        # A limited session keeps exactly the items it started with, even if more are imported.
        run.filters = {**filters, "item_ids": ids}
    run.label = _("Human: %(name)s") % {"name": clinician.get_username()}
    run.status = RunStatus.RUNNING
    run.total = len(ids)
    run.with_image = True
    run.created_by = opened_by
    run.started_at = timezone.now()
    run.save()
    return run


@transaction.atomic
def human_baseline_reassign(*, run: Run, clinician, opened_by) -> Run:
    """Give a session's selection to another clinician: a new session over the same items, and
    the old one ends if it was still open (its answers stay, scored as a partial baseline).

    Each clinician answers the whole selection: a human baseline is one person's accuracy, so
    the new session does not start where the old one stopped."""
    if run.kind != RunKind.HUMAN:
        raise DomainError(_("Only a human baseline is given to a clinician."))
    if clinician.pk == run.human_id:
        raise DomainError(_("This session is already this clinician's."), code="same_clinician")
    session = human_baseline_open(
        benchmark=run.benchmark,
        clinician=clinician,
        opened_by=opened_by,
        filters=run.filters,
        item_ids=(run.filters or {}).get("item_ids"),
    )
    run_cancel(run=run)
    return session


@transaction.atomic
def human_answer_submit(
    *, run: Run, item: Item, user, letter: str, seconds_spent: float | None = None
) -> Prediction:
    """Record the clinician's answer to one item; the run closes with its summary when complete."""
    if run.kind != RunKind.HUMAN or run.human_id != user.pk:
        raise DomainError(_("This session belongs to another clinician."), code="not_yours")
    letter = (letter or "").strip().upper()
    options = dict(baseline_options(item, run.benchmark.label_sets))
    if letter not in options:
        raise DomainError(_("Pick one of the options."))
    # A classification answer is its label, read as a model's is (services.runs.task_scores).
    label = options[letter] if item.kind == ItemKind.LABEL else ""
    if not baseline_items(run).filter(pk=item.pk).exists():
        raise DomainError(_("This item is not part of the session."))
    claimed = Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
        completed=F("completed") + 1
    )
    if not claimed:
        raise DomainError(_("This session is closed."), code="closed")
    try:
        with transaction.atomic():
            prediction = Prediction.objects.create(
                run=run,
                item=item,
                item_version=item.version,
                raw_text=letter,
                extracted=letter,
                label=label,
                hit=(label if item.kind == ItemKind.LABEL else letter) == item.answer,
                latency_ms=None if seconds_spent is None else max(0.0, float(seconds_spent)) * 1000,
            )
    except IntegrityError as error:
        raise DomainError(_("You have already answered this item."), code="duplicate") from error
    human_baseline_settle(run=run)
    return prediction


@transaction.atomic
def human_baseline_settle(*, run: Run) -> Run:
    """Count an open session against its still-reviewable items and close it once each is
    answered: an item rejected during the session (answered or not) leaves its total, so the
    session's progress and its next item agree, and it can always end."""
    if run.kind != RunKind.HUMAN or run.status != RunStatus.RUNNING:
        return run
    answered, total = baseline_progress(run)
    Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(completed=answered, total=total)
    run.completed, run.total = answered, total
    if answered >= total:
        _close(run)
    return run


def _close(run: Run) -> None:
    # A human baseline closes like a model's run: same summary, same leaderboard row; its
    # counts stay those of its still-reviewable items (run_finish counts every answer).
    finished = run_finish(run_id=run.pk)
    Run.objects.filter(pk=run.pk).update(completed=run.completed, total=run.total)
    run.summary, run.status, run.finished_at = (
        finished.summary,
        finished.status,
        finished.finished_at,
    )
