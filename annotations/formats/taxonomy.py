"""MedQ-DEG-Bench vocabularies: modalities, the 18 degradation types, severities.

One place for the spellings FORMATS.md fixes, so readers, the degradation engine
and the review pages agree on them. The modalities and degradation kinds themselves belong to the
engine (`imaging.modalities`); the pure cores may import `formats`, never the other way.
"""

from __future__ import annotations

from annotations.imaging.modalities import (
    ANY_MODALITY_KINDS,
    CT_KINDS,
    HISTOPATHOLOGY_KINDS,
    MODALITIES,
    MRI_KINDS,
)

__all__ = [
    "ANY_MODALITY_KINDS",
    "CT_KINDS",
    "DEGRADATION_TYPES",
    "HISTOPATHOLOGY_KINDS",
    "KINDS_BY_MODALITY",
    "MODALITIES",
    "MODALITY_ALIASES",
    "MRI_KINDS",
    "SEVERITIES",
    "kind_fits_modality",
    "normalise_degradation_type",
    "normalise_modality",
    "normalise_severity",
]

# Spellings seen in published files that mean one of the canonical modalities.
MODALITY_ALIASES = {"mr": "MRI", "pathology": "Histopathology"}

DEGRADATION_TYPES = CT_KINDS + MRI_KINDS + HISTOPATHOLOGY_KINDS + ANY_MODALITY_KINDS

_SPECIFIC_KINDS = {"CT": CT_KINDS, "MRI": MRI_KINDS, "Histopathology": HISTOPATHOLOGY_KINDS}
KINDS_BY_MODALITY: dict[str, frozenset[str]] = {
    modality: frozenset(_SPECIFIC_KINDS.get(modality, ()) + ANY_MODALITY_KINDS)
    for modality in MODALITIES
}

SEVERITIES = ("clean", "mild", "severe")
_SEVERITY_SPELLINGS = {
    "": "clean",
    "clean": "clean",
    "l0": "clean",
    "0": "clean",
    "mild": "mild",
    "l1": "mild",
    "1": "mild",
    "severe": "severe",
    "l2": "severe",
    "2": "severe",
}

_MODALITY_BY_KEY = {modality.lower(): modality for modality in MODALITIES} | MODALITY_ALIASES


def normalise_modality(text: str) -> str | None:
    """Canonical modality for `text` (case-insensitive, aliases accepted), else None."""
    return _MODALITY_BY_KEY.get(text.strip().lower())


def normalise_severity(text: str) -> str | None:
    """The canonical severity (clean, mild, severe) for an accepted spelling, else None."""
    return _SEVERITY_SPELLINGS.get(text.strip().lower())


def normalise_degradation_type(text: str) -> str | None:
    """The degradation id for `text` (case-insensitive), '' for none, else None."""
    key = text.strip().lower()
    if key in ("", "none", "clean"):
        return ""
    return key if key in DEGRADATION_TYPES else None


def kind_fits_modality(kind: str, modality: str) -> bool:
    """Whether degradation `kind` applies to images of `modality` (canonical names)."""
    return kind in KINDS_BY_MODALITY.get(modality, frozenset())
