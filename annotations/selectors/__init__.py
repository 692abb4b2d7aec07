"""Reads that are more than one filter: dashboards, listings."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Prefetch

from annotations.models import Benchmark, Item, ItemImage, ItemStatus
from annotations.models.item import TAXONOMY_FIELDS
from annotations.selectors.visibility import in_scope, with_gold_hidden


@dataclass
class BenchmarkSummary:
    benchmark: Benchmark
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def curated(self) -> int:
        return self.counts.get(ItemStatus.AGREED, 0) + self.counts.get(ItemStatus.ADJUDICATED, 0)

    @property
    def bars(self) -> list[tuple[str, str, int, float]]:
        """(status, label, count, percent) in workflow order, for the stacked progress bar."""
        total = self.total or 1
        return [
            (
                value,
                str(label),
                self.counts.get(value, 0),
                100.0 * self.counts.get(value, 0) / total,
            )
            for value, label in ItemStatus.choices
        ]


def benchmark_summaries(user) -> list[BenchmarkSummary]:
    """The benchmarks in `user`'s scope with their item counts by status, in two queries
    whatever the size."""
    benchmarks = list(in_scope(Benchmark.objects.all(), user, benchmark_path="pk").order_by("name"))
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    items = in_scope(Item.objects.all(), user)
    for row in items.values("benchmark_id", "status").annotate(n=Count("id")).order_by():
        counts[row["benchmark_id"]][row["status"]] = row["n"]
    return [BenchmarkSummary(b, counts.get(b.id, {})) for b in benchmarks]


def benchmark_items(
    benchmark: Benchmark, *, status: str = "", kind: str = "", category: str = "", query: str = ""
):
    items = Item.objects.filter(benchmark=benchmark).order_by("source_index")
    if status:
        items = items.filter(status=status)
    if kind:
        items = items.filter(kind=kind)
    if category:
        items = items.filter(category=category)
    if query:
        items = items.filter(question__icontains=query)
    return items.prefetch_related("item_images__image")


ITEM_FILTERS = ("status", "kind", *TAXONOMY_FIELDS)


def item_list(user, benchmark: Benchmark, filters: dict[str, str]):
    """The items of `benchmark` (loaded through the visibility rules) for a listing, filtered
    on equal values of `ITEM_FILTERS`, annotated with `gold_hidden`, in index order."""
    items = Item.objects.filter(benchmark=benchmark).select_related("benchmark")
    items = items.filter(**{name: value for name, value in filters.items() if name in ITEM_FILTERS})
    items = items.prefetch_related(
        Prefetch("item_images", queryset=ItemImage.objects.select_related("image"))
    )
    return with_gold_hidden(items, user, benchmark_path="benchmark").order_by("source_index")


@dataclass(frozen=True)
class KeysetPage:
    """A page of items after a source index: a pool's list never counts or skips rows."""

    object_list: list
    next_after: int | None
    first: bool

    def __iter__(self):
        return iter(self.object_list)


def keyset_page(items, after: str | None, size: int) -> KeysetPage:
    """The `size` items (ordered by source_index) after the index `after` (a digit string)."""
    first = not (after and after.lstrip("-").isdigit())
    if after and not first:
        items = items.filter(source_index__gt=int(after))
    rows = list(items[: size + 1])
    more = len(rows) > size
    rows = rows[:size]
    return KeysetPage(rows, rows[-1].source_index if more and rows else None, first)
