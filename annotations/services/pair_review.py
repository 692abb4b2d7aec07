"""Pair review of a degraded twin beside its clean item, on the double-review machinery.

A pair review is a Review of the degraded item with the pair fields filled. Its verdict is derived
so that the review service's rule already separates the main outcome: "not answerable" is a
rejection (reason `unanswerable`: the twin cannot serve as a question), otherwise an accept.
The review service settles on verdicts only; `pair_reviews_agree` adds the pair rule on top, in
the same transaction: an agreement also needs realism within one point and the same severity
judgement, else the item is disputed and goes to adjudication like any other item.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from annotations.models import Item, ItemStatus, RejectReason, Review, SeverityJudgement, Verdict
from annotations.services.errors import DomainError
from annotations.services.review import ReviewOutcome, review_submit

LEFT, RIGHT = "left", "right"
REALISM_TOLERANCE = 1


def pair_reviews_agree(reviews: Sequence[Review]) -> bool:
    """Whether pair reviews agree: same answerable verdict, realism within 1, same severity."""
    if len(reviews) < 2:
        return True
    answerable = {review.answerable for review in reviews}
    severity = {review.severity_judgement for review in reviews}
    realism = [review.realism for review in reviews if review.realism is not None]
    close = not realism or max(realism) - min(realism) <= REALISM_TOLERANCE
    return len(answerable) == 1 and len(severity) == 1 and close


def degraded_side(*, item_id: int, reviewer_id: int) -> str:
    """Where a blinded reviewer sees the degraded image: fixed per (item, reviewer), 50/50."""
    digest = hashlib.sha256(f"pair-side:{item_id}:{reviewer_id}".encode()).digest()
    return LEFT if digest[0] % 2 == 0 else RIGHT


@transaction.atomic
def pair_review_submit(
    *,
    item: Item,
    reviewer,
    version: int,
    answerable: bool,
    realism: int,
    severity_judgement: str,
    comment: str = "",
    blinded: bool = False,
    identified_side: str = "",
    seconds_spent: float | None = None,
) -> ReviewOutcome:
    """Record a reviewer's judgement of a degraded twin, then apply the pair agreement rule.

    A benchmark whose curator blinded its pair reviews takes blinded reviews only."""
    blinded = blinded or item.benchmark.pairs_blinded
    if item.clean_twin_id is None:
        raise DomainError(_("This item is not a degraded twin."), code="not_a_pair")
    if severity_judgement not in SeverityJudgement.values:
        raise DomainError(_("Say whether the severity is too mild, right or too strong."))
    if not 1 <= int(realism) <= 5:
        raise DomainError(_("Realism is scored from 1 to 5."))
    if blinded and identified_side not in (LEFT, RIGHT):
        raise DomainError(_("Say which side you think is degraded."))
    pair = {
        "answerable": bool(answerable),
        "realism": int(realism),
        "severity_judgement": severity_judgement,
    }
    if blinded:
        pair["identified_degraded_side"] = identified_side
        pair["degraded_side"] = degraded_side(item_id=item.pk, reviewer_id=reviewer.pk)
    outcome = review_submit(
        item=item,
        reviewer=reviewer,
        verdict=Verdict.ACCEPT if answerable else Verdict.REJECT,
        reason="" if answerable else RejectReason.UNANSWERABLE,
        version=version,
        comment=comment,
        seconds_spent=seconds_spent,
        pair=pair,
    )
    if outcome.status in (ItemStatus.AGREED, ItemStatus.REJECTED):
        reviews = list(Review.objects.filter(item=item, item_version=outcome.version))
        if not pair_reviews_agree(reviews):
            Item.objects.filter(pk=item.pk).update(
                status=ItemStatus.DISPUTED, updated_at=timezone.now()
            )
            item.status = ItemStatus.DISPUTED
            return ReviewOutcome(
                review=outcome.review, status=ItemStatus.DISPUTED, version=outcome.version
            )
    return outcome


def benchmark_pairs_blind(*, benchmark, blinded: bool) -> None:
    """Make every pair review of the benchmark blinded (a reader study), or leave it to each
    reviewer's own mode. Reviews already given keep how they were made."""
    benchmark.pairs_blinded = bool(blinded)
    benchmark.save(update_fields=["pairs_blinded"])
