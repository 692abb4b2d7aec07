"""Reads for Gastric-X cases: case lists, the case page, volumes and their voxel caches."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings
from django.db.models import Count, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotations.imaging import ct
from annotations.imaging.chunks import ChunkedVolume
from annotations.models import Box, Case, Family, Item, Volume
from annotations.selectors import visibility

PHASE_ORDER = ("non_contrast", "arterial", "venous", "delayed")
_OPEN_CACHES = 16


class _MemmapCache:
    """Open voxel memmaps kept per process, least recently used first out.

    Opening a ``.npy`` costs a header parse and an mmap; keeping it open makes the slice
    endpoint read only the pages of the slice asked for (bench/ct_slice.py).
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._open: OrderedDict[str, np.memmap | ChunkedVolume] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: Path) -> np.memmap | ChunkedVolume:
        key = str(path)
        with self._lock:
            if key in self._open:
                self._open.move_to_end(key)
                return self._open[key]
        voxels = ct.open_voxel_cache(path)
        with self._lock:
            self._open[key] = voxels
            while len(self._open) > self._size:
                self._open.popitem(last=False)
        return voxels

    def clear(self) -> None:
        with self._lock:
            self._open.clear()


memmaps = _MemmapCache(_OPEN_CACHES)


def volume_cache_file(volume: Volume) -> Path:
    return Path(settings.MEDIA_ROOT) / volume.cache_path


def volume_voxels(volume: Volume) -> np.memmap | ChunkedVolume:
    """The volume's HU voxels (z, y, x) int16, read like an array: its stored chunks (a slice
    inflated when asked for), or the memory-mapped ``.npy`` of a volume not converted yet."""
    return memmaps.get(volume_cache_file(volume))


def volume_chunk_file(volume: Volume, index: int) -> Path | None:
    """The gzip file of chunk ``index`` as stored (``ChunkError`` out of range), or None for a
    volume still stored as ``.npy`` (its chunks are compressed when asked for)."""
    voxels = volume_voxels(volume)
    return voxels.chunk_file(index) if isinstance(voxels, ChunkedVolume) else None


def phase_sorted(volumes) -> list[Volume]:
    return sorted(volumes, key=lambda v: PHASE_ORDER.index(v.phase))


def gastricx_cases(user, benchmark=None) -> QuerySet[Case]:
    """Cases in `user`'s scope with their counts of volumes, questions, curated questions and
    boxes, and `gold_hidden` (one query)."""
    cases = visibility.in_scope(Case.objects.filter(benchmark__family=Family.GASTRICX), user)
    if benchmark is not None:
        cases = cases.filter(benchmark=benchmark)
    # The stage is the classification items' gold (`gold_hidden`: a running human baseline).
    cases = visibility.with_gold_hidden(cases, user, benchmark_path="benchmark")
    return (
        cases.select_related("benchmark", "endoscopy_image")
        .annotate(
            n_volumes=Count("volumes", distinct=True),
            n_items=Count("items", distinct=True),
            n_curated=Count(
                "items", filter=Q(items__status__in=["agreed", "adjudicated"]), distinct=True
            ),
            n_boxes=_boxes_counted(user),
        )
        .order_by("benchmark__name", "case_id")
    )


@dataclass
class CasePage:
    case: Case
    volumes: list[Volume]
    items: Sequence[Item]


def _blinded_cases(user) -> QuerySet:
    """Cases `user` sees as a blinded reviewer (an open review of one of its items): the case
    is the unit of blinding, so its counts must not move with the other reviewers' work."""
    return Item.objects.filter(
        visibility.items_blinded_for(user) | Q(case__in=visibility.cases_in_review_by(user))
    ).values("case_id")


def _boxes_counted(user) -> Coalesce:
    """The number of a case's CT boxes `user` sees, by the rule that shows them
    (`visibility.boxes_visible_to`): a count must not tell what the page hides, neither the
    other reviewers' boxes in a blinded case nor the imported ones during a human baseline."""
    seen = visibility.boxes_visible_to(
        user, Box.objects.filter(volume__case=OuterRef("pk")).exclude(state__in=Box.LEFT_OUT)
    )
    counted = seen.order_by().values("volume__case").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def case_page(case: Case, user) -> CasePage:
    """Everything the case page shows, in a fixed number of queries. In a case `user` reviews,
    an item's review count is their own (the others' progress stays hidden)."""
    volumes = phase_sorted(
        case.volumes.prefetch_related(
            Prefetch("boxes", queryset=Box.objects.select_related("author").order_by("id"))
        )
    )
    counted = Q(reviews__reviewer=user) | ~Q(case__in=_blinded_cases(user))
    items = list(
        Item.objects.filter(case=case)
        .annotate(n_reviews=Count("reviews", filter=counted))
        .order_by("source_index")
    )
    return CasePage(case=case, volumes=volumes, items=items)


def case_for_api(user, pk: int) -> Case:
    """The case with everything the API shows, annotated with `gold_hidden`; 404 outside
    `user`'s scope."""
    cases = Case.objects.select_related("benchmark", "endoscopy_image").prefetch_related(
        "indicators",
        "volumes",
        Prefetch("items", queryset=Item.objects.order_by("source_index")),
    )
    cases = visibility.with_gold_hidden(cases, user, benchmark_path="benchmark")
    return visibility.without_blinded_gold(visibility.get_case_for_user_or_404(user, pk, cases))


def volume_boxes(volume: Volume) -> QuerySet[Box]:
    return Box.objects.filter(volume=volume).select_related("author", "volume").order_by("id")


def image_boxes(image) -> QuerySet[Box]:
    return Box.objects.filter(image=image).select_related("author").order_by("id")
