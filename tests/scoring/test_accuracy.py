from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from annotations.scoring.accuracy import Score, breakdown, vlmeval_report, wilson_interval


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

    report = vlmeval_report(records)

    assert list(report) == ["dev", "test"]
    assert list(report["test"]) == ["Overall", "perception", "reasoning", "bleeding", "polyp"]
    test_row = report["test"]
    assert (test_row["Overall"].hits, test_row["Overall"].n) == (2, 3)
    assert (test_row["perception"].hits, test_row["perception"].n) == (1, 2)
    assert (test_row["polyp"].hits, test_row["polyp"].n) == (2, 2)
    assert (test_row["bleeding"].hits, test_row["bleeding"].n) == (0, 1)
    # dev has no perception item: VLMEvalKit shows NaN in that cell.
    assert report["dev"]["perception"].n == 0
    assert math.isnan(report["dev"]["perception"].accuracy)


def test_it_puts_records_without_a_split_in_none() -> None:
    report = vlmeval_report([{"hit": True, "category": "polyp"}, {"hit": False}])

    assert list(report) == ["none"]
    assert list(report["none"]) == ["Overall", "polyp"]
    assert report["none"]["Overall"].accuracy == pytest.approx(0.5)


def test_it_reads_a_category_named_like_an_l2_category_from_category() -> None:
    records = [
        {"hit": True, "l2-category": "lesion", "category": "other"},
        {"hit": False, "l2-category": "other", "category": "lesion"},
    ]

    row = vlmeval_report(records)["none"]

    # "lesion" is first placed as an l2-category column, then overwritten by the category value.
    assert list(row) == ["Overall", "lesion", "other"]
    assert row["lesion"].hits == 0
    assert row["other"].hits == 1
