"""Pools and drawn benchmarks as their hub shows them: per stratum quota, drawn, agreed,
rejected, still open and still to draw; the draws made from a pool. Counts only."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count

from annotations.models import TAXONOMY_FIELDS, Benchmark, Draw, Item, ItemStatus
from annotations.models.item import CURATED_STATUSES

# Broad to narrow, so that ticking two boxes names strata as "scene / task".
STRATUM_ORDER: tuple[str, ...] = (
    "scene",
    "modality",
    "task",
    "subtask",
    "category",
    "l2_category",
    "dataset",
)
STRATUM_ORDER += tuple(name for name in TAXONOMY_FIELDS if name not in STRATUM_ORDER)


@dataclass(frozen=True)
class StratumRow:
    label: str
    quota: int
    drawn: int
    agreed: int
    rejected: int
    open: int  # drawn, neither curated nor rejected yet (pending, in review, disputed)
    exhausted: bool

    @property
    def to_draw(self) -> int:
        return max(self.quota - (self.drawn - self.rejected), 0)


@dataclass
class DrawSummary:
    draw: Draw
    rows: list[StratumRow] = field(default_factory=list)

    @property
    def to_draw(self) -> int:
        return sum(row.to_draw for row in self.rows)

    @property
    def last_round(self) -> dict[str, Any]:
        rounds = self.draw.report.get("rounds", [])
        return rounds[-1] if rounds else {}

    @property
    def totals(self) -> StratumRow:
        return StratumRow(
            "",
            sum(r.quota for r in self.rows),
            sum(r.drawn for r in self.rows),
            sum(r.agreed for r in self.rows),
            sum(r.rejected for r in self.rows),
            sum(r.open for r in self.rows),
            False,
        )


def draw_summary(benchmark: Benchmark) -> DrawSummary | None:
    """The strata of a drawn benchmark with their counts (None for one not drawn)."""
    if benchmark.drawn_from_id is None:
        return None
    draw = Draw.objects.select_related("pool").filter(benchmark=benchmark).first()
    if draw is None:
        return None
    counts: dict[tuple, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = (
        Item.objects.filter(benchmark=benchmark)
        .order_by()
        .values(*draw.fields, "status")
        .annotate(n=Count("id"))
    )
    for row in rows:
        counts[tuple(row[name] for name in draw.fields)][row["status"]] += row["n"]
    summary = DrawSummary(draw)
    for stratum in draw.strata.all():
        by_status = counts.get(tuple(stratum.values), {})
        drawn = sum(by_status.values())
        agreed = sum(by_status.get(status, 0) for status in CURATED_STATUSES)
        rejected = by_status.get(ItemStatus.REJECTED, 0)
        summary.rows.append(
            StratumRow(
                stratum.label,
                stratum.quota,
                drawn,
                agreed,
                rejected,
                drawn - agreed - rejected,
                stratum.exhausted,
            )
        )
    return summary


@dataclass(frozen=True)
class PoolSummary:
    fields: list[str]  # the taxonomy fields the pool's items have, to stratify by
    draws: list[Draw]
    others: list[Benchmark]  # what its images may be checked against


def pool_summary(pool: Benchmark, visible: Any) -> PoolSummary | None:
    """What a pool's hub offers: its fields, the benchmarks drawn from it, and the other
    benchmarks (of `visible`, the user's) whose images a draw can leave out."""
    if not pool.is_pool:
        return None
    present = {column.replace("-", "_") for column in pool.taxonomy}
    fields = [name for name in STRATUM_ORDER if name in present]
    draws = list(
        Draw.objects.filter(pool=pool).select_related("benchmark").order_by("-created_at")[:20]
    )
    others = list(visible.exclude(pk=pool.pk).order_by("name")[:200])
    return PoolSummary(fields, draws, others)
