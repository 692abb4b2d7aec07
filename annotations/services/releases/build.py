"""Versioned releases: create, build and publish, fail, retry. A published release never changes;
a building or failed one is rebuilt from scratch into a fresh partial folder, under a lock."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext

from annotations.formats import stream
from annotations.formats.release_layout import PART_BYTES, TEMP_MARK, ExportOptions
from annotations.models import Benchmark, Release, ReleaseItem, ReleaseStatus
from annotations.services import dispatch
from annotations.services.errors import DomainError
from annotations.services.recovery import Lease, LeaseLost, heartbeat, lease_claim, lease_update
from annotations.services.releases import export
from annotations.services.releases.selection import (
    check_label_sets,
    check_release_name,
    check_withheld_split,
    clean_filters,
    release_items,
)

RECORD_SECONDS = 1.0  # how often a build records its rows and progress (`_Recorder`)
RECORD_ROWS = 10_000

# Release.filters holds the item filters and, under this key, the split whose answers are withheld.
WITHHOLD_KEY = "withhold_split"


def release_folder(name: str, version: str) -> Path:
    return Path(settings.RELEASES_ROOT) / name / version


def release_selection(release: Release) -> tuple[dict, str]:
    """(item filters, withheld split) of a release."""
    filters = dict(release.filters or {})
    withhold = filters.pop(WITHHOLD_KEY, "")
    return filters, withhold


@transaction.atomic
def release_create(
    *,
    benchmark: Benchmark,
    name: str,
    version: str,
    user=None,
    include_all: bool = False,
    filters: dict | None = None,
    withhold_split: str = "",
    path: Path | None = None,
) -> Release:
    """A new release (queued) of the benchmark's items that match the selection."""
    check_release_name(name)
    check_release_name(version, what="version")
    cleaned = clean_filters(filters)
    if Release.objects.filter(name=name, version=version).exists():
        raise DomainError(
            gettext(
                "Release %(name)s %(version)s already exists; a published version never "
                "changes, so give the new one another version."
            )
            % {"name": name, "version": version}
        )
    items = release_items(benchmark, include_all=include_all, filters=cleaned)
    count = items.count()
    check_label_sets(benchmark.label_sets or {}, items)
    check_withheld_split(items, withhold_split)
    if not count:
        raise DomainError(gettext("This selection holds no item: there is nothing to release."))
    return Release.objects.create(
        benchmark=benchmark,
        name=name,
        version=version,
        status=ReleaseStatus.QUEUED,
        filters={**cleaned, WITHHOLD_KEY: withhold_split} if withhold_split else cleaned,
        include_all=include_all,
        path=str(path or release_folder(name, version)),
        item_count=count,
        created_by=user,
    )


def release_start(**fields) -> Release:
    """Create a release and build it on a worker once the row is committed."""
    release = release_create(**fields)
    dispatch.enqueue(dispatch.RELEASE_BUILD, release.pk)
    return release


def release_build(
    *,
    release: Release,
    progress: Callable[[int], None] | None = None,
    part_bytes: int | None = PART_BYTES,
    local_layout: bool | None = None,
    claimable: tuple[str, ...] = (
        "queued",
        "building",
        "failed",
    ),  # the command's; a task's: queued
) -> Release:
    """Build the files from scratch and publish them under a beating lease; a release not in
    `claimable` is left as it is. A failure marks it failed (and is raised)."""
    target = Path(release.path or release_folder(release.name, release.version))
    busy = DomainError(gettext("This release is being built by another process."))
    with stream.exclusive_lock(target.parent / f".{target.name}.lock", busy=busy):
        rows = Release.objects.filter(status__in=claimable)
        lease = lease_claim(rows, release.pk, status="building", error="", progress=0)
        if lease is not None:
            with heartbeat(lease):
                _build(release, target, lease, progress, part_bytes, local_layout)
    release.refresh_from_db()
    return release


def _build(release: Release, target: Path, lease: Lease, progress, part_bytes, local_layout):
    stream.sweep_build(target, TEMP_MARK, (release.name, release.version))
    ReleaseItem.objects.filter(release=release).delete()
    filters, withhold = release_selection(release)
    recorder = _Recorder(release.pk, lease)
    options = ExportOptions.release(
        version=release.version,
        withhold_split=withhold,
        part_bytes=part_bytes,
        local_layout=local_layout,
    )
    try:
        result = export.release_export(
            benchmark=release.benchmark,
            out_dir=target,
            name=release.name,
            include_all=release.include_all,
            filters=filters,
            progress=progress,
            options=options,
            on_chunk=recorder,
        )
        recorder.flush()
    except LeaseLost:
        raise
    except Exception as error:
        message = str(error) or type(error).__name__
        release_fail(release_id=release.pk, message=message, attempt=lease.attempt)
        raise
    lease_update(
        lease,
        status=ReleaseStatus.PUBLISHED,
        manifest=result.manifest,
        warnings={"formula_cells": result.formula_cells} if result.formula_cells["total"] else {},
        item_count=result.item_count,
        progress=result.item_count,
        published_at=timezone.now(),
    )


def release_fail(*, release_id: int, message: str, attempt: int | None = None) -> None:
    """Mark a release that was being built as failed (by the builder holding lease `attempt`,
    when given); what it had recorded is dropped."""
    building = Release.objects.filter(pk=release_id, status=ReleaseStatus.BUILDING)
    if attempt is not None:
        building = building.filter(attempts=attempt)
    with transaction.atomic():
        if building.update(status=ReleaseStatus.FAILED, error=message[:2000]):
            ReleaseItem.objects.filter(release_id=release_id).delete()


def release_retry(*, release: Release) -> Release:
    """Queue a failed release for a fresh build on a worker."""
    with transaction.atomic():
        changed = Release.objects.filter(pk=release.pk, status=ReleaseStatus.FAILED).update(
            status=ReleaseStatus.QUEUED, error="", progress=0, heartbeat_at=timezone.now()
        )
        if not changed:
            raise DomainError(gettext("Only a failed release can be retried."))
        dispatch.enqueue(dispatch.RELEASE_BUILD, release.pk)
    release.refresh_from_db()
    return release


class _Recorder:
    """Records the revision of each item written, and the progress, in transactions of their own
    (seen by the page at once): at the first chunk, then once per `RECORD_SECONDS` or `RECORD_ROWS`."""

    def __init__(self, release_id: int, lease: Lease | None = None) -> None:
        self.release_id, self.lease = release_id, lease
        self.pending: list[ReleaseItem] = []
        self.last: float | None = None

    def __call__(self, written: list[tuple[int, int]]) -> None:
        if self.lease is not None:
            self.lease.check()  # taken over by another worker: stop writing
        self.pending += [
            ReleaseItem(release_id=self.release_id, item_id=item, item_version=version)
            for item, version in written
        ]
        now = time.monotonic()
        late = self.last is None or now - self.last >= RECORD_SECONDS
        if late or len(self.pending) >= RECORD_ROWS:
            self.flush()
            self.last = now

    def flush(self) -> None:
        if self.pending:
            with transaction.atomic():
                ReleaseItem.objects.bulk_create(self.pending, batch_size=2000)
                rows = Release.objects.filter(pk=self.release_id)
                if self.lease is not None:
                    rows = rows.filter(attempts=self.lease.attempt)
                rows.update(progress=F("progress") + len(self.pending))
            self.pending = []
