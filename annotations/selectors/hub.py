"""The benchmark hub: one benchmark's counts, progress and the work around it, for one user.

Everything here is a count or a list of people: no review, verdict or answer, so nothing a
blinded reviewer may not see. The caller loads the benchmark through the visibility rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from annotations.access import CURATOR, REVIEWER, has_role
from annotations.models import (
    Benchmark,
    Case,
    Item,
    ItemKind,
    ItemStatus,
    Release,
    Run,
    RunKind,
)
from annotations.models.item import CURATED_STATUSES
from annotations.selectors.work import work_on

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


@dataclass(frozen=True)
class Reviewer:
    username: str
    open_count: int  # open assignments, every benchmark
    open_here: int  # open assignments on this benchmark


@dataclass
class Hub:
    benchmark: Benchmark
    by_status: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    mine_open: int = 0  # items in my review queue here (the queue's own count)
    mine_done: int = 0
    pairs_open: int = 0
    to_settle: int = 0  # disputes here I may settle
    cases: int = 0
    twins: int = 0
    runs: int = 0
    baselines: int = 0
    releases: int = 0
    reviewers: list[Reviewer] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.by_status.values())

    @property
    def curated(self) -> int:
        return sum(self.by_status.get(status, 0) for status in CURATED_STATUSES)

    @property
    def percent_curated(self) -> float:
        return 100.0 * self.curated / self.total if self.total else 0.0

    @property
    def unassigned(self) -> int:
        return self.by_status.get(ItemStatus.PENDING, 0)

    @property
    def disputed(self) -> int:
        return self.by_status.get(ItemStatus.DISPUTED, 0)

    @property
    def status_rows(self) -> list[tuple[str, StrOrPromise, int, float]]:
        """(status, label, count, percent) in workflow order."""
        total = self.total or 1
        return [
            (
                value,
                label,
                self.by_status.get(value, 0),
                100.0 * self.by_status.get(value, 0) / total,
            )
            for value, label in ItemStatus.choices
        ]

    @property
    def kind_rows(self) -> list[tuple[str, StrOrPromise, int]]:
        """(kind, label, count) for the kinds this benchmark has."""
        return [
            (value, label, self.by_kind[value])
            for value, label in ItemKind.choices
            if self.by_kind.get(value)
        ]


def _count(queryset) -> Coalesce:
    """The number of `queryset`'s rows for the outer benchmark, as a subquery."""
    counted = queryset.filter(benchmark=OuterRef("pk")).order_by().values("benchmark")
    return Coalesce(Subquery(counted.annotate(n=Count("pk")).values("n")), 0)


def benchmark_hub(user: Any, benchmark: Benchmark) -> Hub:
    """The hub of `benchmark` as `user` sees it, in a fixed number of queries (two, one more for
    a reviewer, one more for an adjudicator, one more with the reviewers' load for a curator)
    whatever the size. The user's open work is counted as the queues count it (selectors.work)."""
    hub = Hub(benchmark=benchmark)
    items = Item.objects.filter(benchmark=benchmark).values("status", "kind").order_by()
    rows = items.annotate(n=Count("id"), twins=Count("id", filter=Q(clean_twin__isnull=False)))
    for row in rows:
        hub.by_status[row["status"]] = hub.by_status.get(row["status"], 0) + row["n"]
        hub.by_kind[row["kind"]] = hub.by_kind.get(row["kind"], 0) + row["n"]
        hub.twins += row["twins"]
    work = work_on(user, benchmark.pk)
    hub.mine_open, hub.mine_done = work.review_open, work.review_done
    hub.pairs_open, hub.to_settle = work.pairs_open, work.disputes
    counts = Benchmark.objects.filter(pk=benchmark.pk).values(
        n_cases=_count(Case.objects.all()),
        n_runs=_count(Run.objects.exclude(kind=RunKind.HUMAN)),
        n_baselines=_count(Run.objects.filter(kind=RunKind.HUMAN)),
        n_releases=_count(Release.objects.all()),
    )[0]
    hub.cases, hub.runs, hub.baselines = counts["n_cases"], counts["n_runs"], counts["n_baselines"]
    if has_role(user, CURATOR):
        hub.releases = counts["n_releases"]
        hub.reviewers = reviewer_loads(benchmark)
    return hub


def reviewer_loads(benchmark: Benchmark) -> list[Reviewer]:
    """Everyone who may be assigned (reviewer role), with their open assignments, by name."""
    is_reviewer = Q(groups__name=REVIEWER) | Q(is_superuser=True)
    users = get_user_model().objects.filter(
        Exists(get_user_model().objects.filter(is_reviewer, pk=OuterRef("pk")))
    )
    users = users.annotate(
        open_count=Count("assignments", filter=Q(assignments__completed_at__isnull=True)),
        open_here=Count(
            "assignments",
            filter=Q(
                assignments__completed_at__isnull=True, assignments__item__benchmark=benchmark
            ),
        ),
    ).order_by("username")
    return [Reviewer(u.get_username(), u.open_count, u.open_here) for u in users]
