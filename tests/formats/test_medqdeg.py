from __future__ import annotations

import io

import pytest

from annotations.formats.errors import FormatError, RowWarning
from annotations.formats.medqdeg import MEDQDEG_COLUMNS, MedQDegTsvReader
from annotations.formats.taxonomy import (
    ANY_MODALITY_KINDS,
    DEGRADATION_TYPES,
    KINDS_BY_MODALITY,
    MODALITIES,
    kind_fits_modality,
    normalise_modality,
    normalise_severity,
)
from tests.formats.builders import b64, jpeg_bytes, tsv_text

HEADER = [*MEDQDEG_COLUMNS, "clean_index", "pair_id"]


def deg_row(
    index: int, modality: str, kind: str, severity: str, clean_index: str = ""
) -> list[str]:
    cells = {
        "index": str(index), "image": b64(jpeg_bytes()), "question": "Which organ?", "A": "liver",
        "B": "kidney", "C": "", "D": "", "E": "", "answer": "A", "modality": modality,
        "degradation_type": kind, "degradation_severity": severity, "source": "synthetic",
        "clean_index": clean_index, "pair_id": f"p{index}",
    }  # fmt: skip
    return [cells[name] for name in HEADER]


def read(rows: list[list[str]]) -> MedQDegTsvReader:
    return MedQDegTsvReader(io.BytesIO(tsv_text([HEADER, *rows]).encode()))


def test_it_normalises_modality_type_and_severity_spellings():
    reader = read(
        [
            deg_row(1, "mr", "Ghosting_Artifact", "L1", clean_index="3"),
            deg_row(2, "PATHOLOGY", "bubble_artifact", "2"),
            deg_row(3, "x-ray", "", ""),
            deg_row(4, "Ultrasound", "none", "L0"),
        ]
    )
    rows = list(reader)
    assert reader.problems == []
    assert [
        (row.extra["modality"], row.extra["degradation_type"], row.extra["degradation_severity"])
        for row in rows
    ] == [
        ("MRI", "ghosting_artifact", "mild"),
        ("Histopathology", "bubble_artifact", "severe"),
        ("X-ray", "", "clean"),
        ("Ultrasound", "", "clean"),
    ]
    assert (rows[0].extra["clean_index"], rows[0].extra["pair_id"]) == ("3", "p1")


def test_it_reports_bad_modality_kind_severity_and_clean_index_per_row():
    reader = read(
        [
            deg_row(1, "PET", "gaussian_noise", "mild"),
            deg_row(2, "CT", "jpeg_artifact", "mild"),
            deg_row(3, "CT", "gaussian_noise", "extreme"),
            deg_row(4, "CT", "", "mild"),
            deg_row(5, "CT", "low_dose", "mild", clean_index="six"),
            deg_row(6, "CT", "low_dose", "severe"),
        ]
    )
    assert [row.index for row in reader] == [6]
    assert [(problem.row, problem.column) for problem in reader.problems] == [
        (1, "modality"),
        (2, "degradation_type"),
        (3, "degradation_severity"),
        (4, "degradation_type"),
        (5, "clean_index"),
    ]
    reasons = [problem.reason for problem in reader.problems]
    assert "unknown modality 'PET'" in reasons[0]
    assert reasons[3] == "a degraded image needs a degradation type"
    assert reader.warnings == []


def test_a_degradation_foreign_to_the_modality_is_imported_with_a_warning():
    reader = read(
        [
            deg_row(1, "Ultrasound", "low_dose", "mild"),
            deg_row(2, "mr", "Bubble_Artifact", "severe"),
            deg_row(3, "CT", "low_dose", "severe"),
            deg_row(4, "Ultrasound", "", "clean"),
            deg_row(5, "X-ray", "gaussian_noise", "mild"),
        ]
    )
    rows = list(reader)
    assert reader.problems == []
    assert [row.index for row in rows] == [1, 2, 3, 4, 5]
    assert rows[1].extra["degradation_type"] == "bubble_artifact"  # still normalised
    assert reader.warnings == [
        RowWarning(
            1,
            "degradation_type",
            "degradation_modality_mismatch",
            "degradation 'low_dose' does not apply to Ultrasound images",
        ),
        RowWarning(
            2,
            "degradation_type",
            "degradation_modality_mismatch",
            "degradation 'bubble_artifact' does not apply to MRI images",
        ),
    ]


def test_a_row_refused_for_another_reason_is_not_also_checked_for_the_mismatch():
    reader = read([deg_row(1, "PET", "low_dose", "mild"), deg_row(2, "CT", "blur", "mild")])
    assert list(reader) == []
    assert len(reader.problems) == 2 and reader.warnings == []


def test_it_requires_the_medqdeg_columns():
    header = [name for name in HEADER if name != "degradation_severity"]
    with pytest.raises(FormatError) as caught:
        list(MedQDegTsvReader(io.BytesIO(tsv_text([header]).encode())))
    assert [problem.column for problem in caught.value.problems] == ["degradation_severity"]


def test_the_taxonomy_has_eighteen_distinct_degradations_and_seven_modalities():
    assert len(DEGRADATION_TYPES) == len(set(DEGRADATION_TYPES)) == 18
    assert len(MODALITIES) == 7 and set(KINDS_BY_MODALITY) == set(MODALITIES)
    assert all(set(ANY_MODALITY_KINDS) <= kinds for kinds in KINDS_BY_MODALITY.values())
    assert len(KINDS_BY_MODALITY["CT"]) == len(KINDS_BY_MODALITY["X-ray"]) + 3


@pytest.mark.parametrize(
    ("kind", "modality", "fits"),
    [
        ("sparse_view", "CT", True),
        ("sparse_view", "MRI", False),
        ("undersampling_artifact", "MRI", True),
        ("blood_cell_artifact", "Histopathology", True),
        ("blood_cell_artifact", "Endoscopy", False),
        ("motion_blur", "Dermoscopy", True),
        ("motion_blur", "PET", False),
        ("made_up", "CT", False),
    ],
)
def test_kind_fits_modality(kind: str, modality: str, fits: bool):
    assert kind_fits_modality(kind, modality) is fits


def test_normalisers_reject_unknown_spellings():
    assert normalise_modality(" ct ") == "CT" and normalise_modality("Xray") is None
    assert normalise_severity("MILD") == "mild" and normalise_severity("L3") is None
