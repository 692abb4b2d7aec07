"""Which items a release holds, and whether it can be written (names, label sets)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils.translation import gettext, gettext_lazy

from annotations.formats.release_layout import name_problem
from annotations.models import Benchmark, Item
from annotations.selectors.release_rows import label_fields
from annotations.selectors.releases import FILTER_FIELDS, withheld_conflicts
from annotations.services.errors import DomainError

_NAME_KINDS = {"dataset name": gettext_lazy("dataset name"), "version": gettext_lazy("version")}


def check_release_name(name: str, *, what: str = "dataset name") -> str:
    """Refuse names VLMEvalKit would misread, or that are unsafe as a folder name."""
    words = {"what": _NAME_KINDS.get(what, what), "name": name}
    problem = name_problem(name)
    if problem == "unsafe":
        raise DomainError(
            gettext(
                "The %(what)s '%(name)s' may only hold letters, digits, '.', '_' and '-' "
                "(at most 100, starting with a letter or digit)."
            )
            % words
        )
    if problem:
        raise DomainError(
            gettext(
                "The %(what)s '%(name)s' contains '%(part)s': VLMEvalKit would score it "
                "circularly. Choose another name."
            )
            % {**words, "part": problem}
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


def check_label_sets(label_sets: dict, items: QuerySet[Item]) -> int:
    """Refuse classification items that cannot be multiple-choice rows (VLMEvalKit reads the
    options A to Z only); the most labels one of their sets has."""
    most = 0
    for field in label_fields(items):
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


def check_withheld_split(items: QuerySet[Item], split: str) -> None:
    """Refuse a release whose public files would state a withheld answer."""
    messages = withheld_conflicts(items, split)
    if messages:
        raise DomainError(" ".join(messages), code="withheld_conflict")
