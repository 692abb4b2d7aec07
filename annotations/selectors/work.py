"""Each role's open work per benchmark: one reading for the hub, the landing page and the queues.

The hub once counted every open assignment of the benchmark (pairs, and items that had left
review, included) while the queue showed the reviewer's progress over every benchmark, so the
two disagreed. Here "open" is what the queues serve (selectors.review.assignment_counts and
adjudication_queue), counted per benchmark in one query per role whatever the size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from annotations.access import ADJUDICATOR, REVIEWER, has_role
from annotations.selectors.review import Progress, adjudication_queue, assignment_counts


@dataclass(frozen=True)
class Work:
    review_open: int = 0  # items waiting in my review queue
    review_done: int = 0  # item assignments I completed
    pairs_open: int = 0  # degraded/clean pairs waiting in my pair queue
    pairs_done: int = 0
    disputes: int = 0  # disputes I may settle (never one I reviewed)

    @property
    def review_progress(self) -> Progress:
        return Progress(done=self.review_done, total=self.review_done + self.review_open)

    @property
    def any(self) -> bool:
        return bool(self.review_open or self.pairs_open or self.disputes)


NONE = Work()


def open_work(user: Any, *, benchmark_id: int | None = None) -> dict[int, Work]:
    """`user`'s work by benchmark id (only benchmarks with some): one query for a reviewer,
    one for an adjudicator, whatever the number of items or benchmarks."""
    counts: dict[int, dict[str, int]] = {}
    if has_role(user, REVIEWER):
        for (benchmark, pair), progress in assignment_counts(
            user, benchmark_id=benchmark_id
        ).items():
            mine = counts.setdefault(benchmark, {})
            prefix = "pairs" if pair else "review"
            mine[f"{prefix}_open"] = progress.total - progress.done
            mine[f"{prefix}_done"] = progress.done
    if has_role(user, ADJUDICATOR):
        disputes = adjudication_queue(user, benchmark_id=benchmark_id)
        for benchmark, n in disputes.values_list("benchmark_id").order_by().annotate(n=Count("pk")):
            counts.setdefault(benchmark, {})["disputes"] = n
    return {pk: Work(**fields) for pk, fields in counts.items()}


def work_on(user: Any, benchmark_id: int) -> Work:
    """`user`'s work on one benchmark."""
    return open_work(user, benchmark_id=benchmark_id).get(benchmark_id, NONE)
