"""A reviewer changes or withdraws their own verdict, until another review of the item is in.

After that only adjudication changes the outcome. The earlier verdict is kept as a ReviewChange,
so the item's history shows every verdict ever given.
"""

from __future__ import annotations

from django.db import transaction
from django.forms.models import model_to_dict
from django.utils.translation import gettext as _

from annotations.models import (
    Assignment,
    Item,
    ItemStatus,
    Review,
    ReviewChange,
    ReviewChangeAction,
)
from annotations.services.errors import ConflictError, DomainError, NotAllowedError
from annotations.services.review import (
    PAIR_FIELDS,
    ReviewOutcome,
    _claim_version,
    _pair_fields,
    _review_fields,
    _seconds,
    queue_count_done,
)

SNAPSHOT_FIELDS = ("verdict", "content", "reason", "comment", "seconds_spent", *PAIR_FIELDS)


def _own_open_review(item: Item, reviewer, version: int) -> Review:
    """The reviewer's review of `version`, locked with the item, if it may still change."""
    try:
        _claim_version(item, version, statuses=[ItemStatus.IN_REVIEW])
    except ConflictError:
        raise
    except DomainError as error:
        if error.code != "wrong_status":
            raise
        settled = True  # every review is in: the item is agreed, disputed, rejected…
    else:
        settled = False
    review = Review.objects.filter(item=item, reviewer=reviewer, item_version=version).first()
    if review is None:
        raise DomainError(_("You have not reviewed this item yet."), code="no_review")
    others = Review.objects.filter(item=item, item_version=version).exclude(reviewer=reviewer)
    if settled or others.exists():
        raise NotAllowedError(
            _(
                "The other review of this item is in: your verdict can no longer change. "
                "Only adjudication changes the outcome now."
            ),
            code="review_closed",
        )
    return review


def _keep(review: Review, action: str) -> ReviewChange:
    return ReviewChange.objects.create(
        item_id=review.item_id,
        reviewer_id=review.reviewer_id,
        review=review if action == ReviewChangeAction.CHANGED else None,
        item_version=review.item_version,
        action=action,
        verdict=review.verdict,
        previous=model_to_dict(review, fields=SNAPSHOT_FIELDS),
        reviewed_at=review.created_at,
    )


@transaction.atomic
def review_change(
    *,
    item: Item,
    reviewer,
    verdict: str,
    version: int,
    content: dict | None = None,
    reason: str = "",
    comment: str = "",
    seconds_spent: float | None = None,
    pair: dict | None = None,
) -> ReviewOutcome:
    """Replace my verdict on `version` of the item (the earlier one is kept in its history)."""
    review = _own_open_review(item, reviewer, version)
    verdict, content, reason = _review_fields(item, verdict, content, reason)
    _keep(review, ReviewChangeAction.CHANGED)
    review.verdict, review.content, review.reason = verdict, content, reason
    review.comment = (comment or "").strip()
    added = _seconds(seconds_spent)
    if added is not None:
        review.seconds_spent = (review.seconds_spent or 0.0) + added
    for name, value in _pair_fields(pair).items():
        setattr(review, name, value)
    review.save()
    return ReviewOutcome(review=review, status=item.status, version=item.version)


@transaction.atomic
def review_withdraw(*, item: Item, reviewer, version: int) -> ReviewChange:
    """Take back my verdict on `version`: the item is mine to review again."""
    review = _own_open_review(item, reviewer, version)
    change = _keep(review, ReviewChangeAction.WITHDRAWN)
    review.delete()
    reopened = Assignment.objects.filter(
        item=item, reviewer=reviewer, completed_at__isnull=False
    ).update(completed_at=None)
    if reopened:
        queue_count_done(reviewer=reviewer, item=item, step=-1)
    return change
