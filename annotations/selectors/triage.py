"""Reads of triage: the suspect list of a benchmark and the suspects-first queue order."""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Prefetch, QuerySet

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


def order_queue_by_suspicion(queryset: QuerySet) -> QuerySet:
    """Order assignments in queue order: by their stored rank, then by id.

    The rank is minus the item's suspicion score while the benchmark reviews the suspects first
    (services.triage keeps it), so the most suspect items come first and unscored ones last;
    otherwise every rank is 0 and the queue keeps its order.
    """
    return queryset.order_by("rank", "id")
