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
from annotations.selectors import visibility

SORTS = {"score": ("-score", "item__source_index"), "index": ("item__source_index",)}


def triage_setting(benchmark: Benchmark) -> TriageSetting:
    """The benchmark's setting, or an unsaved default (switch off, nothing computed yet)."""
    return TriageSetting.objects.filter(benchmark=benchmark).first() or TriageSetting(
        benchmark=benchmark
    )


def triage_overview(user) -> list[tuple[Benchmark, TriageSetting | None]]:
    """The benchmarks in `user`'s scope with their triage setting (summary), in one query."""
    benchmarks = visibility.in_scope(Benchmark.objects.all(), user, benchmark_path="pk")
    benchmarks = benchmarks.select_related("triage_setting").order_by("name")
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
    can offer "Review" only where the review page will open. `viewer_reviewing` marks the items
    the viewer is reviewing: their review-derived reasons are not theirs to see
    (`visibility.redact_review_reasons`), and a filter by such a reason leaves them out.
    """
    suspects = Suspicion.objects.filter(item__benchmark=benchmark, score__gt=0)
    if code in ALL_CODES:
        suspects = suspects.filter(item__triage_flags__code=code)
    if viewer is not None:
        reviewing = visibility.items_in_review_by(viewer)
        if code in visibility.REVIEW_REASON_CODES:
            suspects = suspects.exclude(item_id__in=reviewing)
        suspects = suspects.annotate(
            viewer_reviewing=Exists(reviewing.filter(item_id=OuterRef("item_id")))
        )
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
