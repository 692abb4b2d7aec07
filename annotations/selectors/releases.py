"""Reads about releases: listings, the choices of the new-release form, and diffs."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.utils.translation import gettext

from annotations.models import (
    CURATED_STATUSES,
    TAXONOMY_FIELDS,
    Benchmark,
    Item,
    ItemRevision,
    ItemStatus,
    Release,
    ReleaseItem,
)
from annotations.selectors.release_rows import withheld_cases, withheld_input_conflicts

# The filters offered on the new-release form, in the order a curator thinks of them.
FORM_FILTERS = ("split", "category", "task", "scene", "modality", "dataset", "degradation_type")
DIFF_LIMIT = 200
CONTENT_FIELDS = ("question", "hint", "options", "answer")

# The fields a release may be filtered on.
FILTER_FIELDS = (*TAXONOMY_FIELDS, "degradation_type", "degradation_severity")


def release_list(*, benchmark: Benchmark | None = None) -> QuerySet[Release]:
    releases = Release.objects.select_related("benchmark", "created_by").order_by("-created_at")
    return releases.filter(benchmark=benchmark) if benchmark else releases


def release_get(pk: int) -> Release | None:
    return Release.objects.select_related("benchmark", "created_by").filter(pk=pk).first()


def release_filter_choices(benchmark: Benchmark) -> dict[str, list[tuple[str, int]]]:
    """For each form filter, the values present in the benchmark with their item counts."""
    choices: dict[str, list[tuple[str, int]]] = {}
    items = Item.objects.filter(benchmark=benchmark)
    for name in FORM_FILTERS:
        assert name in FILTER_FIELDS
        rows = items.exclude(**{name: ""}).values_list(name).annotate(n=Count("id")).order_by(name)
        values = [(value, count) for value, count in rows]
        if values:
            choices[name] = values
    return choices


@dataclass
class ReleasePreview:
    """What a release with this selection would hold, and what it leaves out and why."""

    benchmark_total: int  # every item of the benchmark
    matching: int  # items the filters keep
    released: int  # ... and that are curated (or every one, with include_all)
    by_status: list[tuple[str, int, bool]]  # (status label, items matching, released?)
    by_category: list[tuple[str, int]]  # of the released items
    withheld_split: str
    withheld_answers: int  # released items of the withheld split: no answer in their TSV
    empty_reason: str = ""  # why nothing would be released
    withheld_cases: int = 0  # cases withheld whole (one of their items is in the split)
    # Where a public input would state a withheld answer: the release is refused until resolved.
    conflicts: list[str] = field(default_factory=list)

    @property
    def outside_filters(self) -> int:
        return self.benchmark_total - self.matching


def release_preview(
    benchmark: Benchmark, *, include_all: bool, filters: dict, withhold_split: str = ""
) -> ReleasePreview:
    """Counts by status and category of the items a release would hold (four queries)."""
    items = Item.objects.filter(benchmark=benchmark)
    total = items.count()
    for name, values in filters.items():
        if values:
            items = items.filter(**{f"{name}__in": values})
    statuses = dict(items.order_by().values_list("status").annotate(n=Count("id")))
    released = items if include_all else items.curated()
    by_status = [
        (str(status.label), statuses[status], include_all or status in CURATED_STATUSES)
        for status in ItemStatus
        if status in statuses
    ]
    categories = released.order_by().values_list("category").annotate(n=Count("id"))
    count = sum(n for _status, n, kept in by_status if kept)
    withheld = cases = 0
    conflicts: list[str] = []
    if withhold_split:
        # The split is decided per case: a withheld case's items are all withheld.
        cases_withheld = withheld_cases(released, withhold_split)
        withheld = released.filter(Q(split=withhold_split) | Q(case__in=cases_withheld)).count()
        cases = released.filter(case__in=cases_withheld).values("case_id").distinct().count()
        conflicts = withheld_conflicts(released, withhold_split)
    preview = ReleasePreview(
        total, sum(statuses.values()), count, by_status,
        sorted(categories, key=lambda row: (-row[1], row[0])), withhold_split, withheld,
        withheld_cases=cases, conflicts=conflicts,
    )  # fmt: skip
    if not count:
        preview.empty_reason = _empty_reason(preview)
    return preview


def _empty_reason(preview: ReleasePreview) -> str:
    if not preview.benchmark_total:
        return gettext("The benchmark has no items yet.")
    if not preview.matching:
        return gettext("No item matches the filters; widen them.")
    return gettext(
        "None of the %(n)d items that match is curated (agreed or adjudicated) yet: finish "
        "their reviews, or include every item."
    ) % {"n": preview.matching}


@dataclass
class ChangedItem:
    index: int
    item_id: int
    old_version: int
    new_version: int
    changes: list[tuple[str, object, object]] = field(default_factory=list)


@dataclass
class ReleaseDiff:
    old: Release
    new: Release
    added_count: int
    removed_count: int
    changed_count: int
    added: list[tuple[int, int, str]]  # (index, item id, question)
    removed: list[tuple[int, int, str]]
    changed: list[ChangedItem]
    limit: int = DIFF_LIMIT


def release_diff(old: Release, new: Release, *, limit: int = DIFF_LIMIT) -> ReleaseDiff:
    """Items added, removed and changed (another revision) from `old` to `new`, with the fields
    that changed; at most `limit` of each are listed, all are counted. Seven queries."""
    old_items = ReleaseItem.objects.filter(release=old)
    new_items = ReleaseItem.objects.filter(release=new)
    added = new_items.exclude(item_id__in=old_items.values("item_id"))
    removed = old_items.exclude(item_id__in=new_items.values("item_id"))
    old_version = old_items.filter(item_id=OuterRef("item_id")).values("item_version")[:1]
    changed = (
        new_items.annotate(old_version=Subquery(old_version))
        .filter(old_version__isnull=False)
        .exclude(item_version=Subquery(old_version))
    )
    changed_rows = list(
        changed.order_by("item__source_index").values_list(
            "item__source_index", "item_id", "old_version", "item_version"
        )[:limit]
    )
    return ReleaseDiff(
        old=old,
        new=new,
        added_count=added.count(),
        removed_count=removed.count(),
        changed_count=changed.count(),
        added=_listed(added, limit),
        removed=_listed(removed, limit),
        changed=_with_changes([ChangedItem(*row) for row in changed_rows]),
        limit=limit,
    )


def _listed(rows: QuerySet[ReleaseItem], limit: int) -> list[tuple[int, int, str]]:
    return list(
        rows.order_by("item__source_index").values_list(
            "item__source_index", "item_id", "item__question"
        )[:limit]
    )


def _with_changes(changed: list[ChangedItem]) -> list[ChangedItem]:
    """Fill in which content fields differ between the two revisions (one query)."""
    if not changed:
        return changed
    wanted = {(c.item_id, c.old_version) for c in changed} | {
        (c.item_id, c.new_version) for c in changed
    }
    contents = {
        (item_id, version): content
        for item_id, version, content in ItemRevision.objects.filter(
            item_id__in={c.item_id for c in changed}
        ).values_list("item_id", "version", "content")
        if (item_id, version) in wanted
    }
    for entry in changed:
        before = contents.get((entry.item_id, entry.old_version)) or {}
        after = contents.get((entry.item_id, entry.new_version)) or {}
        entry.changes = [
            (name, before.get(name), after.get(name))
            for name in CONTENT_FIELDS
            if before.get(name) != after.get(name)
        ]
    return changed


def withheld_conflicts(items: QuerySet[Item], split: str) -> list[str]:
    """The conflicts of a withheld split, one sentence each (the preview lists them)."""
    return [
        gettext(
            "Case %(case)s is withheld, but its retrieval items %(indexes)s would publish one of "
            "its reports (a withheld answer) as their query: leave the retrieval task out with "
            "a filter, or move the case out of the withheld split."
        )
        % {"case": case, "indexes": ", ".join(f"#{index}" for index in indexes)}
        for case, indexes in withheld_input_conflicts(items, split)
    ]
