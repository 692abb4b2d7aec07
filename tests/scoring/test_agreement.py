from __future__ import annotations

import math

import pytest

from annotations.scoring.agreement import (
    cohen_kappa,
    krippendorff_alpha_nominal,
    percent_agreement,
    weighted_kappa,
)

# The classic 2x2 example: 50 applications, both yes 20, only A yes 5, only B yes 10, both no 15.
CLASSIC_A = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
CLASSIC_B = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", nominal example:
# 4 observers, 12 units, None = missing.
N = None
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    "C": [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
}


def _units_of(table: dict[str, list[int | None]]) -> dict[int, list[int | None]]:
    columns = list(zip(*table.values(), strict=True))
    return {unit: list(labels) for unit, labels in enumerate(columns, start=1)}


def test_it_computes_percent_agreement_from_any_iterable() -> None:
    pairs = ((a, b) for a, b in [(1, 1), (1, 2), (2, 2)])

    assert percent_agreement(pairs) == pytest.approx(2 / 3)


def test_it_returns_nan_agreement_without_pairs() -> None:
    assert math.isnan(percent_agreement([]))


def test_it_computes_kappa_on_the_classic_2x2_table() -> None:
    # po = (20 + 15) / 50 = 0.7
    # pe = P(A yes) P(B yes) + P(A no) P(B no) = 0.5 * 0.6 + 0.5 * 0.4 = 0.5
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4
    assert cohen_kappa(CLASSIC_A, CLASSIC_B) == pytest.approx(0.4)


def test_it_gives_kappa_minus_one_for_systematic_disagreement() -> None:
    # po = 0, pe = 0.5 * 0.5 + 0.5 * 0.5 = 0.5, kappa = (0 - 0.5) / 0.5 = -1
    assert cohen_kappa(["yes", "no"], ["no", "yes"]) == pytest.approx(-1.0)


def test_it_returns_nan_kappa_when_chance_agreement_is_already_perfect() -> None:
    assert math.isnan(cohen_kappa(["yes"] * 5, ["yes"] * 5))
    assert math.isnan(cohen_kappa([], []))


def test_it_rejects_raters_of_different_lengths() -> None:
    with pytest.raises(ValueError):
        cohen_kappa(["yes"], ["yes", "no"])
    with pytest.raises(ValueError):
        weighted_kappa([1], [1, 2], categories=[1, 2])


def test_it_computes_linear_weighted_kappa_by_hand() -> None:
    # pairs (1,1) (1,2) (2,2) (3,2), each with probability 1/4; weights |i-j| / 2
    # observed disagreement = 0.25*0.5 + 0.25*0.5 = 0.25
    # marginals: rater a (0.5, 0.25, 0.25), rater b (0.25, 0.75, 0)
    # expected = 0.5*0.75*0.5 + 0.25*0.25*0.5 + 0.25*0.25*1 + 0.25*0.75*0.5 = 0.375
    # kappa_w = 1 - 0.25 / 0.375 = 1/3
    kappa = weighted_kappa([1, 1, 2, 3], [1, 2, 2, 2], categories=[1, 2, 3])

    assert kappa == pytest.approx(1 / 3)


def test_it_computes_quadratic_weighted_kappa_by_hand() -> None:
    # same pairs, weights (|i-j| / 2)^2
    # observed = 0.25*0.25 + 0.25*0.25 = 0.125
    # expected = 0.5*0.75*0.25 + 0.25*0.25*0.25 + 0.25*0.25*1 + 0.25*0.75*0.25 = 0.21875
    # kappa_w = 1 - 0.125 / 0.21875 = 3/7
    kappa = weighted_kappa([1, 1, 2, 3], [1, 2, 2, 2], categories=[1, 2, 3], weights="quadratic")

    assert kappa == pytest.approx(3 / 7)


def test_it_matches_plain_kappa_with_two_categories() -> None:
    weighted = weighted_kappa(CLASSIC_A, CLASSIC_B, categories=["no", "yes"])

    assert weighted == pytest.approx(0.4)


def test_it_rejects_labels_outside_the_categories() -> None:
    with pytest.raises(ValueError):
        weighted_kappa([1, 4], [1, 2], categories=[1, 2, 3])


def test_it_rejects_unknown_weights() -> None:
    with pytest.raises(ValueError):
        weighted_kappa([1], [1], categories=[1, 2], weights="cubic")  # type: ignore[arg-type]


def test_it_returns_nan_weighted_kappa_without_expected_disagreement() -> None:
    assert math.isnan(weighted_kappa([2, 2], [2, 2], categories=[1, 2, 3]))
    assert math.isnan(weighted_kappa([1], [1], categories=[1]))


def test_it_reproduces_krippendorffs_2011_nominal_example() -> None:
    # Unit 12 has one value and is dropped; n = 40 pairable values with totals
    # n1=9, n2=13, n3=10, n4=5, n5=3. Off-diagonal coincidences sum to 8.
    # sum over c != k of n_c n_k = 40^2 - (81 + 169 + 100 + 25 + 9) = 1216
    # alpha = 1 - (n - 1) * 8 / 1216 = 1 - 312/1216 = 0.743421
    alpha = krippendorff_alpha_nominal(_units_of(KRIPPENDORFF_2011))

    assert alpha == pytest.approx(0.743421, abs=1e-6)


def test_it_ignores_units_rated_only_once() -> None:
    units = _units_of(KRIPPENDORFF_2011)
    units["extra"] = ["tumour", None, None]

    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743421, abs=1e-6)


def test_it_gives_alpha_one_when_everyone_always_agrees_on_one_label() -> None:
    assert krippendorff_alpha_nominal({1: ["ok", "ok"], 2: ["ok", "ok", "ok"]}) == 1.0


def test_it_returns_nan_alpha_without_pairable_units() -> None:
    assert math.isnan(krippendorff_alpha_nominal({1: ["ok"], 2: [None, "bad"]}))
    assert math.isnan(krippendorff_alpha_nominal({}))


def test_it_gives_alpha_below_zero_for_systematic_disagreement() -> None:
    # Coincidences: o(a,b) = o(b,a) = 2, n_a = n_b = 2, n = 4.
    # alpha = 1 - (4 - 1) * 4 / (16 - 4 - 4) = 1 - 12/8 = -0.5
    alpha = krippendorff_alpha_nominal({1: ["a", "b"], 2: ["b", "a"]})

    assert alpha == pytest.approx(-0.5)
