"""Reads of triage: the suspect list of a benchmark and the suspects-first queue order."""

from __future__ import annotations

from django.db.models import (
    Case,
    Exists,
    F,
    FloatField,
    OuterRef,
    Prefetch,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from annotations.models import (
    Assignment,
    Benchmark,
    ItemImage,
    ItemStatus,
    Job,
    JobStatus,
    Suspicion,
    TriageSetting,
)
from annotations.scoring.triage import ALL_CODES

SORTS = {"score": ("-score", "item__source_index"), "index": ("item__source_index",)}


def triage_setting(benchmark: Benchmark) -> TriageSetting:
    """The benchmark's setting, or an unsaved default (switch off, nothing computed yet)."""
    return TriageSetting.objects.filter(benchmark=benchmark).first() or TriageSetting(
        benchmark=benchmark
    )


def triage_overview() -> list[tuple[Benchmark, TriageSetting | None]]:
    """Every benchmark with its triage setting (summary), in one query."""
    benchmarks = Benchmark.objects.select_related("triage_setting").order_by("name")
    return [(b, getattr(b, "triage_setting", None)) for b in benchmarks]


def triage_job_active(benchmark: Benchmark) -> Job | None:
    return (
        Job.objects.filter(
            benchmark=benchmark, kind="triage", status__in=(JobStatus.QUEUED, JobStatus.RUNNING)
        )
        .order_by("-pk")
        .first()
    )


def suspicion_list(
    benchmark: Benchmark, *, code: str = "", sort: str = "score", viewer=None
) -> QuerySet[Suspicion]:
    """The benchmark's suspects with their items and images, filtered by one reason code.

    `assigned_to_viewer` tells whether the viewer has an open review of the item, so the page
    can offer "Review" only where the review page will open.
    """
    suspects = Suspicion.objects.filter(item__benchmark=benchmark, score__gt=0)
    if code in ALL_CODES:
        suspects = suspects.filter(item__triage_flags__code=code)
    if viewer is not None:
        mine = Assignment.objects.filter(
            item_id=OuterRef("item_id"),
            reviewer=viewer,
            completed_at__isnull=True,
            item__status=ItemStatus.IN_REVIEW,
        )
        suspects = suspects.annotate(assigned_to_viewer=Exists(mine))
    images = Prefetch("item__item_images", queryset=ItemImage.objects.select_related("image"))
    return (
        suspects.select_related("item")
        .prefetch_related(images)
        .order_by(*SORTS.get(sort, SORTS["score"]))
    )


def suspicion_priority(*, item_path: str = "item") -> Coalesce:
    """The queue priority of an item: its suspicion score when its benchmark has "review the
    suspects first" switched on, else 0 (so switched-off benchmarks keep their order)."""
    prefix = f"{item_path}__" if item_path else ""
    return Coalesce(
        Case(
            When(
                **{f"{prefix}benchmark__triage_setting__suspects_first": True},
                then=F(f"{prefix}suspicion__score"),
            ),
            output_field=FloatField(),
        ),
        Value(0.0),
    )


def order_queue_by_suspicion(queryset: QuerySet, *, item_path: str = "item") -> QuerySet:
    """Order a queue (assignments, or items with item_path="") most suspect first, then by id.

    The review queue can use it as `order_queue_by_suspicion(open_rows)`.
    """
    return queryset.annotate(priority=suspicion_priority(item_path=item_path)).order_by(
        "-priority", "id"
    )
