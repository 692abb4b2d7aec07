"""McNemar's exact test against statsmodels, and the cliff rule on twins built by hand."""

from __future__ import annotations

import pytest
from statsmodels.stats.contingency_tables import mcnemar

from annotations.scoring.cliffs import (
    CliffRule,
    capability_robustness,
    find_cliffs,
    mcnemar_exact,
    twin_triples,
)


@pytest.mark.parametrize(
    ("b", "c"), [(0, 0), (1, 0), (5, 1), (12, 3), (7, 7), (0, 9), (30, 18), (101, 77)]
)
def test_mcnemar_exact_is_statsmodels(b: int, c: int) -> None:
    # Only the discordant cells matter; the concordant ones are arbitrary.
    expected = mcnemar([[13, b], [c, 4]], exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def _triples(kind: str, modality: str, outcomes: list[tuple[bool, bool, bool]], start: int):
    records = []
    for n, (clean, mild, severe) in enumerate(outcomes):
        base = start + 3 * n
        common = {"degradation_type": kind, "modality": modality, "capability": "perception"}
        records += [
            {
                "item": base,
                "clean_twin": None,
                "severity": "clean",
                "hit": clean,
                **common,
                "degradation_type": "",
            },
            {"item": base + 1, "clean_twin": base, "severity": "mild", "hit": mild, **common},
            {"item": base + 2, "clean_twin": base, "severity": "severe", "hit": severe, **common},
        ]
    return records


def test_a_collapse_at_severe_is_a_cliff_and_a_gentle_slope_is_not() -> None:
    # Blur: 20 triples, 18 right clean, 17 mild, 5 severe -> drops 0.05 then 0.60.
    blur = [(n < 18, n < 17, n < 5) for n in range(20)]
    # Noise: 20 triples, 18 / 14 / 10 -> drops 0.20 then 0.20: no cliff (not twice).
    noise = [(n < 18, n < 14, n < 10) for n in range(20)]
    records = _triples("gaussian_blur", "CT", blur, 0) + _triples(
        "gaussian_noise", "MRI", noise, 1000
    )
    result = find_cliffs(records, CliffRule(min_twins=20))
    assert result["rule"] == {"ratio": 2.0, "min_drop": 0.1, "alpha": 0.05, "min_twins": 20}
    rows = result["rows"]
    # Type rows and, with 20 triples each, type x modality rows; sorted by the severe drop.
    assert [(r["degradation_type"], r["modality"]) for r in rows] == [
        ("gaussian_blur", None),
        ("gaussian_blur", "CT"),
        ("gaussian_noise", None),
        ("gaussian_noise", "MRI"),
    ]
    blur_row = rows[0]
    assert blur_row["n"] == 20
    assert (blur_row["accuracy_clean"], blur_row["accuracy_mild"], blur_row["accuracy_severe"]) == (
        0.9,
        0.85,
        0.25,
    )
    assert blur_row["drop_mild"] == pytest.approx(0.05)
    assert blur_row["drop_severe"] == pytest.approx(0.60)
    assert blur_row["p_mild"] == pytest.approx(mcnemar([[0, 1], [0, 0]], exact=True).pvalue)
    assert blur_row["p_severe"] == pytest.approx(mcnemar([[0, 12], [0, 0]], exact=True).pvalue)
    assert blur_row["cliff"] is True
    assert rows[2]["cliff"] is False


def test_each_threshold_can_deny_a_cliff() -> None:
    blur = [(n < 18, n < 17, n < 5) for n in range(20)]
    records = _triples("gaussian_blur", "CT", blur, 0)
    assert find_cliffs(records, CliffRule(ratio=20.0))["rows"][0]["cliff"] is False
    assert find_cliffs(records, CliffRule(min_drop=0.7))["rows"][0]["cliff"] is False
    assert find_cliffs(records, CliffRule(alpha=1e-6))["rows"][0]["cliff"] is False
    # Fewer triples than the cell minimum: the type's row only.
    assert len(find_cliffs(records, CliffRule(min_twins=21))["rows"]) == 1


def test_small_samples_are_not_cliffs_however_steep() -> None:
    # 3 triples, all right until severe, all wrong there: p = 0.25, not significant.
    records = _triples("motion_blur", "X-ray", [(True, True, False)] * 3, 0)
    row = find_cliffs(records)["rows"][0]
    assert row["drop_severe"] == 1.0 and row["p_severe"] == pytest.approx(0.25)
    assert row["cliff"] is False


def test_triples_need_both_twins_and_an_answered_clean_item() -> None:
    records = _triples("gaussian_blur", "CT", [(True, True, True)] * 2, 0)
    records = [r for r in records if r["item"] != 5]  # the second family loses its severe twin
    records.append(
        {"item": 50, "clean_twin": 49, "severity": "mild", "hit": True, "degradation_type": "x"}
    )
    triples = twin_triples(records)
    assert [(t.clean["item"], t.mild["item"], t.severe["item"]) for t in triples] == [(0, 1, 2)]


def test_capability_robustness_pairs_each_twin_with_its_clean_item() -> None:
    records = _triples("gaussian_blur", "CT", [(True, True, False), (True, False, False)], 0)
    rows = capability_robustness(records)
    assert rows == [
        {
            "capability": "perception",
            "degradation_type": "gaussian_blur",
            "severity": "mild",
            "n": 2,
            "accuracy_clean": 1.0,
            "accuracy_degraded": 0.5,
            "drop": 0.5,
        },
        {
            "capability": "perception",
            "degradation_type": "gaussian_blur",
            "severity": "severe",
            "n": 2,
            "accuracy_clean": 1.0,
            "accuracy_degraded": 0.0,
            "drop": 1.0,
        },
    ]
