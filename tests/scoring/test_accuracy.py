from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from annotations.scoring.accuracy import (
    Score,
    breakdown,
    medqdeg_score_table,
    printed_as_vlmeval,
    vlmeval_acc_table,
    wilson_interval,
)


def test_it_computes_the_wilson_interval_of_8_out_of_10() -> None:
    # p = 0.8, z^2 = 3.8416, d = 1 + 3.8416/10 = 1.38416
    # centre = (0.8 + 3.8416/20) / d = 0.99208 / 1.38416 = 0.716738
    # half = 1.96 * sqrt(0.8*0.2/10 + 3.8416/400) / d = 1.96 * sqrt(0.025604) / d = 0.226581
    low, high = wilson_interval(8, 10)

    assert low == pytest.approx(0.490157, abs=1e-6)
    assert high == pytest.approx(0.943319, abs=1e-6)


def test_it_keeps_the_interval_inside_0_1_at_zero_hits() -> None:
    # centre = half = (3.8416/20) / 1.38416 = 0.138770, so the interval is [0, 0.277541]
    low, high = wilson_interval(0, 10)

    assert low == 0.0
    assert high == pytest.approx(0.277541, abs=1e-6)


def test_it_returns_the_whole_range_when_nothing_was_scored() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert math.isnan(Score.from_counts(0, 0).accuracy)


def test_it_rejects_more_hits_than_items() -> None:
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def _records() -> Iterator[dict[str, object]]:
    # A generator can be read only once, so this also checks breakdown makes a single pass.
    yield {"hit": True, "modality": "CT", "severity": "mild"}
    yield {"hit": False, "modality": "CT", "severity": "severe"}
    yield {"hit": 1, "modality": "MRI", "severity": "mild"}
    yield {"hit": 0, "modality": None, "severity": "severe"}
    yield {"hit": float("nan"), "modality": float("nan")}
    yield {"hit": True, "modality": "  "}


def test_it_breaks_accuracy_down_by_each_field() -> None:
    result = breakdown(_records(), ["modality", "severity"])

    overall = result["overall"]
    assert (overall.n, overall.hits) == (6, 3)
    assert overall.accuracy == pytest.approx(0.5)
    by_modality = result["by"]["modality"]
    assert list(by_modality) == ["CT", "MRI"]
    assert (by_modality["CT"].n, by_modality["CT"].hits) == (2, 1)
    assert (by_modality["MRI"].n, by_modality["MRI"].hits) == (1, 1)
    by_severity = result["by"]["severity"]
    assert (by_severity["mild"].hits, by_severity["mild"].n) == (2, 2)
    assert (by_severity["severe"].hits, by_severity["severe"].n) == (0, 2)
    assert by_severity["severe"].accuracy == 0.0


def test_it_reads_a_custom_hit_key() -> None:
    records = [{"correct": True, "scene": "colon"}, {"correct": False, "scene": "colon"}]

    result = breakdown(records, ["scene"], hit_key="correct")

    assert result["by"]["scene"]["colon"].hits == 1
    assert result["by"]["scene"]["colon"].accuracy == pytest.approx(0.5)


def test_it_reports_like_vlmevalkit_by_split_then_overall_l2_category_and_category() -> None:
    records = [
        {"hit": True, "split": "test", "l2-category": "perception", "category": "polyp"},
        {"hit": False, "split": "test", "l2-category": "perception", "category": "bleeding"},
        {"hit": True, "split": "test", "l2-category": "reasoning", "category": "polyp"},
        {"hit": True, "split": "dev", "l2-category": "reasoning", "category": "bleeding"},
    ]

    dev, test = vlmeval_acc_table(records)

    assert list(test) == ["split", "Overall", "perception", "reasoning", "bleeding", "polyp"]
    assert test == {
        "split": "test", "Overall": 2 / 3, "perception": 0.5, "reasoning": 1.0, "bleeding": 0.0,
        "polyp": 1.0,
    }  # fmt: skip
    # dev has no perception item: VLMEvalKit shows NaN in that cell.
    assert dev["split"] == "dev" and math.isnan(dev["perception"])


def test_without_a_split_column_one_row_none_holds_every_item() -> None:
    [row] = vlmeval_acc_table([{"hit": True, "category": "polyp"}, {"hit": False, "category": "x"}])

    assert row == {"split": "none", "Overall": 0.5, "polyp": 1.0, "x": 0.0}


def test_with_a_split_column_items_without_a_split_land_in_a_nan_row() -> None:
    records = [
        {"hit": True, "split": "dev", "category": "polyp"},
        {"hit": True, "split": "", "category": "polyp"},
        {"hit": False, "split": "NA", "category": "polyp"},
    ]

    dev, missing = vlmeval_acc_table(records)

    assert dev == {"split": "dev", "Overall": 1.0, "polyp": 1.0}
    assert missing["split"] == "nan"
    assert math.isnan(missing["Overall"]) and math.isnan(missing["polyp"])


def test_the_header_decides_which_columns_exist() -> None:
    records = [{"hit": True, "split": "dev", "category": "", "l2-category": "x"}]

    [row] = vlmeval_acc_table(records, header=["index", "Category", "answer"])

    # No split column in the file: one row "none"; a category column of missing cells: "nan".
    assert row["split"] == "none" and row["Overall"] == 1.0
    assert list(row) == ["split", "Overall", "nan"] and math.isnan(row["nan"])


def test_names_met_twice_keep_the_first_place_and_mmbench_names_are_abbreviated() -> None:
    records = [
        {"hit": True, "l2-category": "lesion", "category": "logic_reasoning"},
        {"hit": False, "l2-category": "other", "category": "lesion"},
        {"hit": False, "l2-category": "other", "category": "Overall"},
    ]

    [row] = vlmeval_acc_table(records)

    assert list(row) == ["split", "Overall", "lesion", "other", "LR"]
    assert row["lesion"] == 0.0  # the category's value, in the l2-category's place
    assert row["Overall"] == 0.0  # a category named "Overall" overwrites it, as in VLMEvalKit
    assert row["LR"] == 1.0


def test_medqdegs_own_score_table() -> None:
    records = [
        {"hit": True, "modality": "CT", "degradation_type": "low_dose",
         "degradation_severity": "mild", "source": "s1"},
        {"hit": False, "modality": "CT", "degradation_type": "gaussian_noise",
         "degradation_severity": "severe", "source": "s1"},
        {"hit": True, "modality": "MRI", "degradation_type": "",
         "degradation_severity": "clean", "source": "s2"},
    ]  # fmt: skip

    table = medqdeg_score_table(records)

    assert table == {
        "Overall": 2 / 3, "Total": 3, "Modality_CT": 0.5, "Modality_MRI": 1.0,
        "DegType_gaussian_noise": 0.0, "DegType_low_dose": 1.0, "Severity_clean": 1.0,
        "Severity_mild": 1.0, "Severity_severe": 0.0, "Source_s1": 0.5, "Source_s2": 1.0,
    }  # fmt: skip
    assert list(medqdeg_score_table(records, header=["modality"])) == [
        "Overall", "Total", "Modality_CT", "Modality_MRI",
    ]  # fmt: skip


def test_values_print_as_vlmevalkits_log_does() -> None:
    assert printed_as_vlmeval(160 / 748) == "0.213904"
    assert printed_as_vlmeval(1.0) == "1"
    assert printed_as_vlmeval(math.nan) == "nan"
