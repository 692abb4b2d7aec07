"""Which items a release holds, and which columns its TSV has (per benchmark family)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet
from django.utils.translation import gettext, gettext_lazy

from annotations.models import TAXONOMY_FIELDS, Benchmark, Family, Item, ItemKind
from annotations.selectors.releases import FILTER_FIELDS
from annotations.services.errors import DomainError
from annotations.services.imports import COLUMN_FIELDS
from annotations.services.pair_export import PAIR_TSV_COLUMNS

# Fields a release may be filtered on (each to a list of allowed values).
# VLMEvalKit scores a dataset circularly when its name contains one of these.
FORBIDDEN_NAME_PARTS = ("mmbench", "ccbench", "circular", "mmcr")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")

DEFAULT_COLUMNS = [
    "index", "image", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category",
    "split",
]  # fmt: skip
FIELD_COLUMNS = {field: column for column, field in COLUMN_FIELDS.items()}


@dataclass(frozen=True)
class ReportColumns:
    """Which item fields fill VLMEvalKit's `category` and `l2-category` columns, the only groups
    (besides split) its report breaks accuracy down by: EndoBench category/task, MedQ-DEG
    modality/degradation ("clean" for clean images), Gastric-X task/subtask."""

    category: str
    l2_category: str

    def values(self, item) -> tuple[str, str]:
        category = getattr(item, self.category)
        l2 = getattr(item, self.l2_category)
        if self.l2_category == "degradation_type" and not l2:
            l2 = "clean"
        return category, l2


REPORT_COLUMNS = {
    Family.ENDOBENCH: ReportColumns("category", "task"),
    Family.MEDQDEG: ReportColumns("modality", "degradation_type"),
    Family.GASTRICX: ReportColumns("task", "subtask"),
    Family.VLMEVAL: ReportColumns("category", "l2_category"),
}


_NAME_KINDS = {"dataset name": gettext_lazy("dataset name"), "version": gettext_lazy("version")}


def check_release_name(name: str, *, what: str = "dataset name") -> str:
    """Refuse names VLMEvalKit would misread, or that are unsafe as a folder name."""
    words = {"what": _NAME_KINDS.get(what, what), "name": name}
    if not _SAFE_NAME.fullmatch(name or ""):
        raise DomainError(
            gettext(
                "The %(what)s '%(name)s' may only hold letters, digits, '.', '_' and '-' "
                "(at most 100, starting with a letter or digit)."
            )
            % words
        )
    lowered = name.lower()
    for part in FORBIDDEN_NAME_PARTS:
        if part in lowered:
            raise DomainError(
                gettext(
                    "The %(what)s '%(name)s' contains '%(part)s': VLMEvalKit would score it "
                    "circularly. Choose another name."
                )
                % {**words, "part": part}
            )
    return name


def clean_filters(filters: dict | None) -> dict[str, list[str]]:
    """Filters as {field: sorted distinct values}; unknown fields are refused."""
    cleaned: dict[str, list[str]] = {}
    for field_name, value in (filters or {}).items():
        if field_name not in FILTER_FIELDS:
            raise DomainError(
                gettext("Releases cannot be filtered on '%(field)s'.") % {"field": field_name}
            )
        values = value if isinstance(value, list | tuple) else [value]
        values = sorted({str(v) for v in values if v not in (None, "")})
        if values:
            cleaned[field_name] = values
    return dict(sorted(cleaned.items()))


def release_items(
    benchmark: Benchmark, *, include_all: bool, filters: dict | None = None
) -> QuerySet[Item]:
    """The items a release holds: curated ones (agreed or adjudicated) unless include_all."""
    items = Item.objects.filter(benchmark=benchmark)
    if not include_all:
        items = items.curated()
    for field_name, values in clean_filters(filters).items():
        items = items.filter(**{f"{field_name}__in": values})
    return items.order_by("source_index")


def fields_with_values(items: QuerySet[Item]) -> set[str]:
    """The taxonomy and pair fields that hold a value in at least one item (one query)."""
    fields = (*TAXONOMY_FIELDS, "degradation_type", "degradation_severity")
    counts = items.order_by().aggregate(
        **{f: Count("pk", filter=~Q(**{f: ""})) for f in fields},
        clean_twin_id=Count("clean_twin_id"),
    )
    return {name for name, count in counts.items() if count}


def check_label_sets(label_sets: dict, items: QuerySet[Item]) -> int:
    """Refuse classification items that cannot be multiple-choice rows (VLMEvalKit reads the
    options A to Z only); the most labels one of their sets has."""
    fields = items.filter(kind=ItemKind.LABEL).order_by().values_list("target__field", flat=True)
    most = 0
    for field in sorted({str(value or "label") for value in fields.distinct()}):
        labels = label_sets.get(field) or []
        if not labels:
            raise DomainError(
                gettext(
                    "Classification items ask for the label set '%(field)s', which the "
                    "benchmark does not have."
                )
                % {"field": field}
            )
        if len(labels) > 26:
            raise DomainError(
                gettext(
                    "The label set '%(field)s' holds %(count)d labels: VLMEvalKit reads only "
                    "options A to Z, so its classification items cannot be released as multiple "
                    "choice. Shorten the set, or leave these items out with a filter."
                )
                % {"field": field, "count": len(labels)}
            )
        most = max(most, len(labels))
    return most


def tsv_columns(
    benchmark: Benchmark, items: QuerySet[Item], *, report: bool, letters: int = 0
) -> list[str]:
    """The TSV header: the imported columns in file order, then (for a release) the report,
    taxonomy and pair columns the file lacks; option columns up to `letters` options."""
    columns = list(benchmark.columns) if benchmark.columns else list(DEFAULT_COLUMNS)
    have = [c for c in columns if len(c) == 1 and c.isupper()]
    after = columns.index(have[-1]) + 1 if have else len(columns)
    missing = [chr(ord("A") + n) for n in range(letters) if chr(ord("A") + n) not in have]
    columns[after:after] = missing
    if not report:
        return columns
    present = fields_with_values(items)
    wanted = ["category"]
    if REPORT_COLUMNS[benchmark.family].l2_category in present or "l2-category" in columns:
        wanted.append("l2-category")
    wanted += [FIELD_COLUMNS.get(f, f) for f in TAXONOMY_FIELDS if f in present]
    if present & {"clean_twin_id", "degradation_type", "degradation_severity"}:
        wanted += PAIR_TSV_COLUMNS
    for column in wanted:
        if column not in columns:
            columns.append(column)
    return columns
