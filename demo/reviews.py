"""Review activity for the demo: a few items already reviewed by the two demo reviewers, some
agreeing and some not, so the demo adjudicator has disputes of others to settle after `make run`.

The reviews go through the review service, exactly as if the reviewers had clicked.
"""

from __future__ import annotations

from annotations.models import Assignment, Benchmark, Item, RejectReason, Verdict
from annotations.services.review import review_submit

DISPUTES = 4
AGREEMENTS = 2


def _edited(item: Item) -> dict:
    content = item.content()
    return {**content, "question": f"{content['question'].rstrip('?')} (as seen in this frame)?"}


def demo_reviews_seed(*, benchmark: Benchmark, first, second) -> int:
    """Both reviewers decide the benchmark's first items: DISPUTES disagreements, then
    AGREEMENTS agreements. Returns the number of reviews given."""
    items = list(
        Item.objects.filter(
            benchmark=benchmark,
            clean_twin=None,
            assignments__reviewer=first,
            assignments__completed_at=None,
        ).order_by("source_index")[: DISPUTES + AGREEMENTS]
    )
    given = 0
    for position, item in enumerate(items):
        if not Assignment.objects.filter(item=item, reviewer=second).exists():
            continue
        review_submit(item=item, reviewer=first, verdict=Verdict.ACCEPT, version=item.version)
        if position < DISPUTES and position % 2 == 0:
            decision = {"verdict": Verdict.EDIT, "content": _edited(item)}
        elif position < DISPUTES:
            decision = {"verdict": Verdict.REJECT, "reason": RejectReason.AMBIGUOUS}
        else:
            decision = {"verdict": Verdict.ACCEPT}
        review_submit(item=item, reviewer=second, version=item.version, **decision)
        given += 2
    return given
