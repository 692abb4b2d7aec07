"""MedQ-DEG-Bench TSV: the VLMEvalKit reader plus the degradation vocabulary.

Rows come out as `McqRow`s whose `extra` holds canonical values: `modality`
(e.g. "MRI" for "mr"), `degradation_type` (an id, '' for a clean image) and
`degradation_severity` ("clean", "mild" or "severe"). A degradation that does not apply to the
row's modality (`low_dose` on Ultrasound) is imported as it is, with a warning: VLMEvalKit reads
such a file, and the curator decides.
"""

from __future__ import annotations

from annotations.formats.cells import parse_integer
from annotations.formats.errors import RowProblem, RowWarning
from annotations.formats.taxonomy import (
    MODALITIES,
    kind_fits_modality,
    normalise_degradation_type,
    normalise_modality,
    normalise_severity,
)
from annotations.formats.vlmeval import McqRow, McqTsvReader

DEGRADATION_MODALITY_MISMATCH = "degradation_modality_mismatch"

MEDQDEG_COLUMNS = (
    "index",
    "image",
    "question",
    "A",
    "B",
    "C",
    "D",
    "E",
    "answer",
    "modality",
    "degradation_type",
    "degradation_severity",
    "source",
)


class MedQDegTsvReader(McqTsvReader):
    """Reader of a MedQ-DEG TSV (optionally with our `clean_index` and `pair_id`)."""

    family_columns = MEDQDEG_COLUMNS

    def check_family(self, row: McqRow) -> list[RowProblem]:
        problems: list[RowProblem] = []

        def report(column: str, reason: str) -> None:
            problems.append(RowProblem(row.row, column, reason))

        extra = row.extra
        modality = normalise_modality(extra["modality"])
        if modality is None:
            report(
                "modality",
                f"unknown modality {extra['modality']!r} (one of {', '.join(MODALITIES)})",
            )
        else:
            extra["modality"] = modality
        severity = normalise_severity(extra["degradation_severity"])
        if severity is None:
            report(
                "degradation_severity",
                f"unknown severity {extra['degradation_severity']!r} (clean/L0, mild/L1, severe/L2)",
            )
        else:
            extra["degradation_severity"] = severity
        kind_problem = _normalise_kind(extra, severity)
        if kind_problem:
            report("degradation_type", kind_problem)
        elif modality is not None:
            self.warnings.extend(_mismatch(row.row, extra["degradation_type"], modality))
        clean_index = extra.get("clean_index", "")
        if clean_index.strip() and parse_integer(clean_index) is None:
            report("clean_index", f"not an integer: {clean_index!r}")
        return problems


def _normalise_kind(extra: dict[str, str], severity: str | None) -> str | None:
    text = extra["degradation_type"]
    kind = normalise_degradation_type(text)
    if kind is None:
        return f"unknown degradation type {text!r}"
    extra["degradation_type"] = kind
    if not kind and severity in ("mild", "severe"):
        return "a degraded image needs a degradation type"
    return None


def _mismatch(row: int, kind: str, modality: str) -> list[RowWarning]:
    """A warning when a degradation `kind` does not apply to `modality` images."""
    if not kind or kind_fits_modality(kind, modality):
        return []
    detail = f"degradation {kind!r} does not apply to {modality} images"
    return [RowWarning(row, "degradation_type", DEGRADATION_MODALITY_MISMATCH, detail)]
