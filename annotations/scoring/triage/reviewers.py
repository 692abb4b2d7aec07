"""Reviewer signals: a split decision (one reviewer rejects or edits, another accepts) and
reviews that took far longer than usual, a sign the item is hard to judge."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable

from annotations.scoring.triage.types import (
    REVIEWER_EDITED,
    REVIEWER_REJECTED,
    SLOW_REVIEW,
    Key,
    Reason,
    ReviewFacts,
)

WEIGHTS = {REVIEWER_REJECTED: 0.55, REVIEWER_EDITED: 0.4, SLOW_REVIEW: 0.2}
MIN_REVIEWS_FOR_TIMING = 10


def slow_threshold(seconds: list[float], factor: float = 3.0) -> float | None:
    """Seconds above which a review counts as slow: `factor` × the median review time."""
    if len(seconds) < MIN_REVIEWS_FOR_TIMING:
        return None  # too few reviews to know what usual is
    return factor * statistics.median(seconds)


def reviewer_signals(
    reviews: Iterable[ReviewFacts], *, slow_factor: float = 3.0
) -> dict[Key, list[Reason]]:
    """Per item: rejected or edited by some but not all reviewers; unusually long reviews.

    Evidence holds counts only, never who decided what: the page may be opened while other
    reviews of the item are still blinded.
    """
    verdicts: dict[Key, list[str]] = defaultdict(list)
    times: dict[Key, float] = {}
    all_seconds: list[float] = []
    for review in reviews:
        verdicts[review.item].append(review.verdict)
        if review.seconds is not None and review.seconds > 0:
            all_seconds.append(review.seconds)
            times[review.item] = max(times.get(review.item, 0.0), review.seconds)
    threshold = slow_threshold(all_seconds, slow_factor)
    median = statistics.median(all_seconds) if all_seconds else 0.0
    result: dict[Key, list[Reason]] = defaultdict(list)
    for item, seen in verdicts.items():
        for code, verdict, word in (
            (REVIEWER_REJECTED, "reject", "rejected"),
            (REVIEWER_EDITED, "edit", "edited"),
        ):
            count = seen.count(verdict)
            if 0 < count < len(seen):
                result[item].append(
                    Reason(
                        code,
                        WEIGHTS[code],
                        f"{word.capitalize()} by {count} of {len(seen)} reviewers.",
                        {"count": count, "reviews": len(seen)},
                    )
                )
    if threshold is not None:
        for item, seconds in times.items():
            if seconds > threshold:
                result[item].append(
                    Reason(
                        SLOW_REVIEW,
                        WEIGHTS[SLOW_REVIEW],
                        f"A review took {seconds:.0f} s, {seconds / median:.1f}× the median "
                        f"of {median:.0f} s.",
                        {"seconds": round(seconds, 1), "median": round(median, 1)},
                    )
                )
    return dict(result)
