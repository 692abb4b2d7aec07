"""Quotas of a draw: N per value of a field or per combination of fields, or a CSV of quotas."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence

from annotations.sampling.draw import Stratum

QUOTA_COLUMN = "quota"


class QuotaError(ValueError):
    """A quota specification that cannot be read; the message says why."""


def parse_per(specs: Sequence[str], allowed: Iterable[str]) -> tuple[list[str], int]:
    """`--per FIELD=N` flags: (the fields, N). Several flags (or `scene,task=N`) stratify by
    the combination of their fields, every combination with the same N."""
    allowed = set(allowed)
    fields: list[str] = []
    counts = set()
    for spec in specs:
        name, sep, number = spec.partition("=")
        if not sep or not name.strip():
            raise QuotaError(f"{spec!r}: write FIELD=N, e.g. task=50")
        try:
            count = int(number)
        except ValueError:
            raise QuotaError(f"{spec!r}: {number!r} is not a whole number") from None
        if count < 1:
            raise QuotaError(f"{spec!r}: a quota is at least 1")
        counts.add(count)
        for field in name.replace("×", ",").replace("*", ",").split(","):
            field = field.strip().replace("-", "_")
            if field not in allowed:
                raise QuotaError(f"unknown field {field!r}; one of {', '.join(sorted(allowed))}")
            if field in fields:
                raise QuotaError(f"field {field!r} is named twice")
            fields.append(field)
    if not fields:
        raise QuotaError("no quota: give --per FIELD=N or a quota file")
    if len(counts) > 1:
        raise QuotaError(
            "several --per flags make one combination of fields with one N each; "
            "for different quotas per stratum give a quota file"
        )
    return fields, counts.pop()


def per_quotas(strata: Iterable[Stratum], count: int) -> dict[Stratum, int]:
    return dict.fromkeys(strata, count)


def parse_quota_csv(text: str, allowed: Iterable[str]) -> tuple[list[str], dict[Stratum, int]]:
    """A CSV whose header names the fields and `quota` (e.g. `scene,task,quota`), one stratum
    a row: (the fields, quota by stratum). Row numbers in errors count the header as 1."""
    allowed = set(allowed)
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    header = [cell.strip().replace("-", "_") for cell in next(reader, [])]
    if QUOTA_COLUMN not in header:
        raise QuotaError(f"the quota file needs a {QUOTA_COLUMN!r} column")
    fields = [name for name in header if name != QUOTA_COLUMN]
    unknown = [name for name in fields if name not in allowed]
    if unknown or not fields:
        raise QuotaError(
            f"unknown field(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
            f"columns are fields ({', '.join(sorted(allowed))}) and {QUOTA_COLUMN!r}"
        )
    quotas: dict[Stratum, int] = {}
    for number, row in enumerate(reader, start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise QuotaError(f"row {number}: {len(row)} cells, the header has {len(header)}")
        cells = dict(zip(header, row, strict=True))
        try:
            quota = int(cells[QUOTA_COLUMN])
        except ValueError:
            raise QuotaError(
                f"row {number}: quota {cells[QUOTA_COLUMN]!r} is not a whole number"
            ) from None
        if quota < 0:
            raise QuotaError(f"row {number}: a quota cannot be negative")
        stratum = tuple(cells[name].strip() for name in fields)
        if stratum in quotas:
            raise QuotaError(f"row {number}: stratum {' / '.join(stratum)} is listed twice")
        quotas[stratum] = quota
    if not quotas:
        raise QuotaError("the quota file lists no stratum")
    return fields, quotas


def unknown_strata(quotas: Mapping[Stratum, int], present: Iterable[Stratum]) -> list[Stratum]:
    """Strata of a quota file that the pool does not have at all (a typo, most likely)."""
    present = set(present)
    return [stratum for stratum in quotas if stratum not in present]
