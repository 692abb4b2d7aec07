"""Our accuracy tables over the conformance corpus equal tables computed from its own hit column.

The expected tables are built here with pandas, the way VLMEvalKit's `report_acc` and MedQ-DEG's
`evaluate` compute them, from the corpus' recorded VLMEvalKit results (`vlmeval_hit`,
`vlmeval_letter`), so they do not depend on our extractor. Splits, categories and MedQ-DEG fields
are assigned to rows deterministically.
"""

from __future__ import annotations

import math

import pandas as pd

from annotations.scoring import medqdeg_score_table, vlmeval_acc_table
from annotations.scoring.extract import medqdeg_hit, medqdeg_value, vlmeval_opt
from tests.scoring.conformance_corpus import mcq_rows, medqdeg_rows, options_of

SPLITS = ("dev", "test", "val")
MODALITIES = ("CT", "MRI", "X-ray", "Ultrasound", "Endoscopy", "Dermoscopy", "Histopathology")
KINDS = ("gaussian_noise", "motion_blur", "low_dose", "reduce_contrast")


def _same(ours: object, expected: object) -> bool:
    if isinstance(ours, float) and isinstance(expected, float):
        return ours == expected or (math.isnan(ours) and math.isnan(expected))
    return ours == expected


def _expected_report_acc(frame: pd.DataFrame) -> list[dict[str, object]]:
    rows = []
    for split in sorted(set(frame["split"])):
        in_split = frame[frame["split"] == split]
        row: dict[str, object] = {"split": split, "Overall": float(in_split["hit"].mean())}
        for group in ("l2-category", "category"):
            for ability in sorted(set(frame[group])):
                row[ability] = float(in_split[in_split[group] == ability]["hit"].mean())
        rows.append(row)
    return rows


def test_the_vlmevalkit_table_equals_the_one_from_the_corpus_hits():
    corpus = mcq_rows()
    assigned = [
        {
            "split": SPLITS[number % 3],
            "category": row["family"],
            "l2-category": f"{row['n_options']} options",
        }
        for number, row in enumerate(corpus)
    ]
    ours = vlmeval_acc_table(
        {**fields, "hit": vlmeval_opt(row["prediction"], options_of(row)) == row["answer"]}
        for fields, row in zip(assigned, corpus, strict=True)
    )
    frame = pd.DataFrame(assigned)
    frame["hit"] = [int(row["vlmeval_hit"]) for row in corpus]
    expected = _expected_report_acc(frame)

    assert [list(row) for row in ours] == [list(row) for row in expected]
    assert len(expected) == 3 and len(expected[0]) == 2 + 7 + 22  # split, Overall, l2, category
    mismatches = [
        (row["split"], column, ours_row[column], value)
        for ours_row, row in zip(ours, expected, strict=True)
        for column, value in row.items()
        if not _same(ours_row[column], value)
    ]
    assert mismatches == []


def test_the_medqdeg_table_equals_the_one_from_the_corpus_values():
    corpus = medqdeg_rows()
    assigned = [
        {
            "answer": "ABCDE"[number % 5],
            "modality": MODALITIES[number % 7],
            "degradation_type": KINDS[number % 4],
            "degradation_severity": ("mild", "severe")[number % 2],
            "source": f"source{number % 3}",
        }
        for number in range(len(corpus))
    ]
    ours = medqdeg_score_table(
        {**fields, "hit": medqdeg_hit(medqdeg_value(row["prediction"]), fields["answer"])}
        for fields, row in zip(assigned, corpus, strict=True)
    )
    frame = pd.DataFrame(assigned)
    frame["hit"] = [
        str(fields["answer"]).strip().upper() == str(row["vlmeval_letter"]).upper()
        for fields, row in zip(assigned, corpus, strict=True)
    ]
    expected: dict[str, object] = {"Overall": float(frame["hit"].mean()), "Total": len(frame)}
    for column, prefix in (
        ("modality", "Modality"),
        ("degradation_type", "DegType"),
        ("degradation_severity", "Severity"),
        ("source", "Source"),
    ):
        for value in sorted(frame[column].unique()):
            expected[f"{prefix}_{value}"] = float(frame[frame[column] == value]["hit"].mean())

    assert list(ours) == list(expected)
    assert [key for key in expected if not _same(ours[key], expected[key])] == []
