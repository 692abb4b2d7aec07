"""The only writer of a benchmark's settings after its import: taxonomy, option letters, label sets.

Every run and release reads them, so each change is a BenchmarkRevision (who, when, why, from
what to what) made against the version the curator saw: a stale change is a conflict. A change
that would re-letter or re-classify items already in the benchmark is refused, naming the items:
a label set that items use is fixed (its order gives their letters and their gold letter), option
letters may not drop below the options an item has, and a taxonomy may not drop a value items
carry. The benchmark's name, family and imported columns never change (releases, parsing and
export layout depend on them).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from annotations.models import (
    COLUMN_FIELDS,
    TAXONOMY_FIELDS,
    Benchmark,
    BenchmarkRevision,
    Item,
    ItemKind,
)
from annotations.services.errors import ConflictError, DomainError

EDITABLE_SETTINGS = ("taxonomy", "option_letters", "label_sets")
FIXED_SETTINGS = ("name", "family", "columns")
SHOWN_ITEMS = 10  # items named in a refusal; the count says how many more


class SettingsRefused(DomainError):
    """A change that would silently re-letter or re-classify items; `items` are the item ids."""

    code = "settings_refused"

    def __init__(self, message: str, *, items: list[int]) -> None:
        super().__init__(message)
        self.items = items


def _named(ids: list[int]) -> str:
    shown = ", ".join(f"#{pk}" for pk in ids[:SHOWN_ITEMS])
    more = len(ids) - SHOWN_ITEMS
    return _("%(shown)s and %(more)d more") % {"shown": shown, "more": more} if more > 0 else shown


def _label_field(item: Item) -> str:
    return str((item.target or {}).get("field") or "label")


def _check_label_sets(benchmark: Benchmark, before: dict, after: dict) -> str:
    changed = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    for name, labels in after.items():
        if not isinstance(labels, list) or not all(isinstance(x, str) and x for x in labels):
            raise DomainError(
                _("Label set %(name)s must be a list of non-empty labels.") % {"name": name}
            )
        if len(set(labels)) != len(labels):
            raise DomainError(_("Label set %(name)s names a label twice.") % {"name": name})
    if not changed:
        return ""
    # A set that was missing lettered nothing (runs and releases refuse items without one):
    # adding it letters those items for the first time, which the revision records.
    added = {name for name in changed if not before.get(name)}
    users: dict[str, list[int]] = {name: [] for name in changed}
    for item in benchmark.items.filter(kind=ItemKind.LABEL).only("pk", "target").order_by("pk"):
        if _label_field(item) in users:
            users[_label_field(item)].append(item.pk)
    used = sorted(pk for name in changed - added for pk in users[name])
    if used:
        names = ", ".join(sorted(name for name in changed - added if users[name]))
        raise SettingsRefused(
            _(
                "The label sets %(names)s are used by %(count)d items (%(items)s): changing them "
                "would re-letter their options and gold answers."
            )
            % {"names": names, "count": len(used), "items": _named(used)},
            items=used,
        )
    lettered = sorted(pk for name in added for pk in users[name])
    if lettered:
        return _(
            "%(count)d items (%(items)s) are lettered by the added sets %(names)s from now on."
        ) % {
            "count": len(lettered),
            "items": _named(lettered),
            "names": ", ".join(sorted(added)),
        }
    return _("Label sets changed: %(names)s; no item uses them.") % {
        "names": ", ".join(sorted(changed))
    }


def _check_option_letters(benchmark: Benchmark, after: list) -> str:
    expected = [chr(ord("A") + i) for i in range(len(after))]
    if after != expected or not 2 <= len(after) <= 26:
        raise DomainError(_("Option letters must run from A without gaps (A, B, C, …), 2 to 26."))
    longer = [
        item.pk
        for item in benchmark.items.exclude(kind=ItemKind.LABEL)
        .only("pk", "options")
        .order_by("pk")
        if len([text for text in item.options if text]) > len(after)
    ]
    if longer:
        raise SettingsRefused(
            _("%(count)d items (%(items)s) have more than %(letters)d options.")
            % {"count": len(longer), "items": _named(longer), "letters": len(after)},
            items=longer,
        )
    return _("Items may now have up to %(letters)d options.") % {"letters": len(after)}


def _check_taxonomy(benchmark: Benchmark, after: dict) -> str:
    for name, values in after.items():
        if not isinstance(values, list) or not all(isinstance(x, str) for x in values):
            raise DomainError(
                _("Taxonomy field %(name)s must be a list of values.") % {"name": name}
            )
    outside: list[int] = []
    for name, values in after.items():
        column = COLUMN_FIELDS.get(name, name)
        if column not in TAXONOMY_FIELDS:
            continue
        found = (
            benchmark.items.exclude(**{column: ""})
            .exclude(**{f"{column}__in": values})
            .values_list("pk", flat=True)
        )
        outside.extend(found)
    if outside:
        ids = sorted(set(outside))
        raise SettingsRefused(
            _("%(count)d items (%(items)s) carry taxonomy values the new taxonomy drops.")
            % {"count": len(ids), "items": _named(ids)},
            items=ids,
        )
    return ""


def benchmark_settings_change(
    benchmark: Benchmark,
    user: Any,
    changes: dict[str, Any],
    reason: str,
    expected_version: int,
) -> list[BenchmarkRevision]:
    """Apply `changes` ({setting: new value}) made by `user` on the page of `expected_version`;
    one revision per setting that actually changes. Nothing is written if anything is refused."""
    fixed = sorted(set(changes) & set(FIXED_SETTINGS))
    if fixed:
        raise DomainError(
            _("%(names)s cannot be changed after the import.") % {"names": ", ".join(fixed)}
        )
    unknown = sorted(set(changes) - set(EDITABLE_SETTINGS))
    if unknown:
        raise DomainError(_("Unknown settings: %(names)s.") % {"names": ", ".join(unknown)})
    reason = (reason or "").strip()
    if not reason:
        raise DomainError(_("Say why the settings change."))
    with transaction.atomic():
        current = Benchmark.objects.select_for_update().get(pk=benchmark.pk)
        if current.settings_version != expected_version:
            raise ConflictError(
                _("The settings changed since this page was loaded: reload and redo the change."),
                current_version=current.settings_version,
            )
        changed = {
            name: value for name, value in changes.items() if getattr(current, name) != value
        }
        if not changed:
            return []
        consequences: dict[str, str] = {}
        if "label_sets" in changed:
            if not isinstance(changed["label_sets"], dict):
                raise DomainError(_("Label sets must map a field to its labels."))
            consequences["label_sets"] = _check_label_sets(
                current, current.label_sets or {}, changed["label_sets"]
            )
        if "option_letters" in changed:
            if not isinstance(changed["option_letters"], list):
                raise DomainError(_("Option letters must be a list."))
            consequences["option_letters"] = _check_option_letters(
                current, changed["option_letters"]
            )
        if "taxonomy" in changed:
            if not isinstance(changed["taxonomy"], dict):
                raise DomainError(_("The taxonomy must map a field to its values."))
            consequences["taxonomy"] = _check_taxonomy(current, changed["taxonomy"])
        version = current.settings_version + 1
        revisions = [
            BenchmarkRevision(
                benchmark=current,
                version=version,
                setting=name,
                before=getattr(current, name),
                after=value,
                reason=reason,
                consequence=consequences.get(name, ""),
                author=user,
            )
            for name, value in sorted(changed.items())
        ]
        for name, value in changed.items():
            setattr(current, name, value)
        current.settings_version = version
        current.save(update_fields=[*changed, "settings_version"])
        BenchmarkRevision.objects.bulk_create(revisions)
    for name in [*changed, "settings_version"]:
        setattr(benchmark, name, getattr(current, name))
    return revisions
