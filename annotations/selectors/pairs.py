"""Reads of the pair workflow: the pair queue and page, degradation overview, robustness.

Each function runs a fixed number of queries whatever the benchmark size.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Prefetch, Q, QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _

from annotations.charts import Chart, robustness_chart
from annotations.models import (
    Assignment,
    Benchmark,
    Item,
    ItemImage,
    Prediction,
    Review,
    Run,
    Severity,
)
from annotations.scoring.accuracy import Score
from annotations.selectors import visibility
from annotations.selectors.review import Progress, next_in_queue, open_assignments

IMAGES = Prefetch("item_images", queryset=ItemImage.objects.select_related("image"))


def clean_items(benchmark: Benchmark) -> QuerySet[Item]:
    """Items that can get twins: marked clean, or unmarked and not themselves a twin."""
    unmarked = Q(degradation_severity=Severity.NONE, clean_twin__isnull=True)
    return (
        Item.objects.filter(benchmark=benchmark)
        .filter(Q(degradation_severity=Severity.CLEAN) | unmarked)
        .exclude(modality="")
        .order_by("source_index")
    )


def _pair_assignments(user):
    return Assignment.objects.filter(reviewer=user, item__clean_twin__isnull=False)


def pair_queue_next(user, *, after: int | None = None) -> Assignment | None:
    """The reviewer's next open pair assignment (after assignment `after`, wrapping round)."""
    return next_in_queue(open_assignments(user).filter(item__clean_twin__isnull=False), after=after)


def pair_progress(user) -> Progress:
    row = _pair_assignments(user).aggregate(
        total=Count("id"), done=Count("id", filter=Q(completed_at__isnull=False))
    )
    return Progress(done=row["done"], total=row["total"])


@dataclass
class PairPage:
    item: Item  # the degraded twin
    clean: Item
    assignment: Assignment
    review: Review | None  # the viewer's own review, never another's
    progress: Progress


def pair_page(user, pk: int) -> PairPage:
    """A degraded twin assigned to `user`, with both images and the user's own review; else 404.
    403 while the user answers a human baseline of its benchmark (the page shows the gold)."""
    rows = visibility.with_gold_hidden(
        Assignment.objects.all(), user, benchmark_path="item__benchmark"
    )
    assignment = get_object_or_404(
        rows.select_related("item__benchmark", "item__clean_twin").prefetch_related(
            Prefetch("item__item_images", queryset=ItemImage.objects.select_related("image")),
            Prefetch(
                "item__clean_twin__item_images", queryset=ItemImage.objects.select_related("image")
            ),
            Prefetch(
                "item__reviews",
                queryset=Review.objects.filter(reviewer=user).order_by("-id"),
                to_attr="own_reviews",
            ),
        ),
        item_id=pk,
        reviewer=user,
        item__clean_twin__isnull=False,
    )
    if assignment.gold_hidden:
        raise PermissionDenied(_("Review this pair once your human-baseline session is over."))
    item = assignment.item
    return PairPage(
        item=item,
        clean=item.clean_twin,
        assignment=assignment,
        review=item.own_reviews[0] if item.own_reviews else None,
        progress=pair_progress(user),
    )


@dataclass
class DegradeOverview:
    clean_by_modality: list[tuple[str, int]]
    twins_by_kind: list[tuple[str, int, int]]  # kind, mild, severe
    twins: int


def degrade_overview(benchmark: Benchmark) -> DegradeOverview:
    """What a curator needs before degrading: clean items per modality, twins per kind."""
    clean = clean_items(benchmark).values("modality").annotate(n=Count("id")).order_by("modality")
    twins: dict[str, Counter] = defaultdict(Counter)
    rows = (
        Item.objects.filter(benchmark=benchmark, clean_twin__isnull=False)
        .values("degradation_type", "degradation_severity")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        twins[row["degradation_type"]][row["degradation_severity"]] += row["n"]
    return DegradeOverview(
        clean_by_modality=[(row["modality"], row["n"]) for row in clean],
        twins_by_kind=[(k, twins[k]["mild"], twins[k]["severe"]) for k in sorted(twins)],
        twins=sum(sum(c.values()) for c in twins.values()),
    )


def pair_benchmarks(user) -> list[tuple[Benchmark, int, int]]:
    """Benchmarks in `user`'s scope with a modality on some item: (benchmark, items, degraded
    twins)."""
    rows = (
        visibility.in_scope(Item.objects.exclude(modality=""), user)
        .values("benchmark_id")
        .annotate(n=Count("id"), twins=Count("id", filter=Q(clean_twin__isnull=False)))
        .order_by()
    )
    counts = {row["benchmark_id"]: (row["n"], row["twins"]) for row in rows}
    benchmarks = Benchmark.objects.filter(pk__in=list(counts)).order_by("name")
    return [(b, *counts[b.pk]) for b in benchmarks]


def blinded_pair_benchmarks(user) -> list[str]:
    """Names of the benchmarks in `user`'s scope whose curator blinded every pair review."""
    blinded = Benchmark.objects.filter(pairs_blinded=True)
    return list(
        visibility.in_scope(blinded, user, benchmark_path="pk").values_list("name", flat=True)
    )


# --- robustness ----------------------------------------------------------------------------

CLEAN = Severity.CLEAN.value
LEVELS = (CLEAN, Severity.MILD.value, Severity.SEVERE.value)
GROUPINGS = (("modality", "modality"), ("degradation_type", "kind"), ("source", "source"))


@dataclass
class GroupRow:
    label: str
    scores: dict[str, Score]  # by level; absent level = no prediction there
    drop: float | None  # accuracy on degraded twins minus on their clean items (paired)
    pairs: int


@dataclass
class RunRobustness:
    run: Run
    overall: dict[str, Score]
    drop: float | None
    pairs: int
    groups: dict[str, list[GroupRow]] = field(default_factory=dict)
    charts: list[tuple[str, Chart]] = field(default_factory=list)

    @property
    def drop_text(self) -> str:
        return format_drop(self.drop)


def format_drop(drop: float | None) -> str:
    """A drop in percentage points, signed; '' when there is no pair to compare."""
    if drop is None:
        return ""
    # Translators: "pp" is percentage points.
    return _("%(drop)s pp") % {"drop": f"{100.0 * drop:+.1f}"}


class _Tally:
    def __init__(self) -> None:
        self.levels: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.paired = [0, 0, 0]  # twins, twin hits, clean-twin hits
        self.clean_of_twins: dict[int, bool] = {}

    def add(self, level: str, hit: bool) -> None:
        self.levels[level][0] += 1
        self.levels[level][1] += hit

    def add_pair(self, hit: bool, clean_id: int, clean_hit: bool) -> None:
        self.paired[0] += 1
        self.paired[1] += hit
        self.paired[2] += clean_hit
        self.clean_of_twins[clean_id] = clean_hit

    def scores(self) -> dict[str, Score]:
        counts = dict(self.levels)
        if not counts.get(CLEAN) and self.clean_of_twins:
            # A kind has no clean items of its own: its clean bar is their clean twins'.
            values = self.clean_of_twins.values()
            counts[CLEAN] = [len(values), sum(values)]
        return {
            level: Score.from_counts(counts[level][1], counts[level][0])
            for level in LEVELS
            if counts.get(level, [0])[0]
        }

    def drop(self) -> float | None:
        n, hits, clean_hits = self.paired
        return (hits - clean_hits) / n if n else None


def _level(row: Mapping[str, Any]) -> str:
    if row["item__clean_twin_id"] is not None:
        return row["item__degradation_severity"]
    return CLEAN


def _robustness_of(run: Run, rows: list[Mapping[str, Any]]) -> RunRobustness:
    hits = {row["item_id"]: row["hit"] is True for row in rows}
    overall = _Tally()
    groups: dict[str, dict[str, _Tally]] = {name: defaultdict(_Tally) for name, _ in GROUPINGS}
    for row in rows:
        level, hit = _level(row), hits[row["item_id"]]
        clean_id = row["item__clean_twin_id"]
        tallies = [overall]
        for name, _label in GROUPINGS:
            value = row[f"item__{name}"]
            if value:
                tallies.append(groups[name][value])
        for tally in tallies:
            tally.add(level, hit)
            if clean_id is not None and clean_id in hits:
                tally.add_pair(hit, clean_id, hits[clean_id])
    result = RunRobustness(
        run=run, overall=overall.scores(), drop=overall.drop(), pairs=overall.paired[0]
    )
    for name, label in GROUPINGS:
        result.groups[label] = [
            GroupRow(value, tally.scores(), tally.drop(), tally.paired[0])
            for value, tally in sorted(groups[name].items())
        ]
    everything = GroupRow(_("All items"), result.overall, result.drop, result.pairs)
    result.charts = [("overall", _chart([everything]))]
    result.charts += [(label, _chart(rows)) for label, rows in result.groups.items() if rows]
    return result


def _chart(rows: list[GroupRow]) -> Chart:
    return robustness_chart(rows, levels=LEVELS, drop_text=format_drop)


def robustness(benchmark: Benchmark) -> list[RunRobustness]:
    """Per run of the benchmark: accuracy on clean / mild / severe items overall and by
    modality, degradation kind and source, with the paired drop from the clean twin.

    Clean items belong to no degradation kind: a kind's clean bar is the accuracy on the clean
    twins of its degraded items. Two queries.
    """
    runs = list(Run.objects.filter(benchmark=benchmark).order_by("created_at", "pk"))
    rows_by_run: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    predictions = Prediction.objects.filter(run__in=runs).values(
        "run_id",
        "item_id",
        "hit",
        "item__clean_twin_id",
        "item__degradation_type",
        "item__degradation_severity",
        "item__modality",
        "item__source",
    )
    for row in predictions.order_by():
        rows_by_run[row["run_id"]].append(row)
    return [_robustness_of(run, rows_by_run[run.pk]) for run in runs if rows_by_run[run.pk]]


# --- chart geometry (inline SVG drawn by the template) -------------------------------------
