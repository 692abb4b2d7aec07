"""Accuracy, macro-F1 and the confusion matrix over a fixed label set, checked by hand."""

from __future__ import annotations

import math

import pytest

from annotations.scoring.classification import (
    accuracy,
    confusion_matrix,
    macro_f1,
    per_label_f1,
)

TRUTH = ["T1", "T1", "T2", "T3"]
PREDICTED = ["T1", "T2", "T2", "T2"]
STAGES = ["T1", "T2", "T3", "T4"]


def test_it_computes_macro_f1_by_hand() -> None:
    # T1: TP 1, FP 0, FN 1 -> P 1, R 1/2, F1 2/3; T2: TP 1, FP 2 -> P 1/3, R 1, F1 1/2;
    # T3: TP 0, FN 1 -> 0. Macro F1 over the labels seen = (2/3 + 1/2 + 0) / 3 = 7/18
    assert per_label_f1(TRUTH, PREDICTED) == pytest.approx({"T1": 2 / 3, "T2": 1 / 2, "T3": 0.0})
    assert macro_f1(TRUTH, PREDICTED) == pytest.approx(7 / 18)


def test_a_label_of_the_set_without_support_or_prediction_takes_zero_division() -> None:
    # T4 is in the set but neither true nor predicted anywhere: its F1 is 0/0.
    assert macro_f1(TRUTH, PREDICTED, STAGES) == pytest.approx((2 / 3 + 1 / 2) / 4)
    assert macro_f1(TRUTH, PREDICTED, STAGES, zero_division=1.0) == pytest.approx(
        (2 / 3 + 1 / 2 + 1) / 4
    )
    # NaN leaves it out of the mean, as scikit-learn's zero_division=np.nan does.
    assert macro_f1(TRUTH, PREDICTED, STAGES, zero_division=math.nan) == pytest.approx(7 / 18)
    assert math.isnan(per_label_f1(TRUTH, PREDICTED, STAGES, zero_division=math.nan)["T4"])


def test_labels_that_are_never_predicted_or_only_predicted_count_as_zero() -> None:
    # a: TP 1, FP 1 (the "a" given to c), FN 1 (the "b") -> 2/4; b (never true): FP 1 -> 0;
    # c (true, never predicted): FN 1 -> 0
    assert per_label_f1(["a", "a", "c"], ["a", "b", "a"], ["a", "b", "c"]) == pytest.approx(
        {"a": 1 / 2, "b": 0.0, "c": 0.0}
    )
    assert macro_f1(["a", "a", "c"], ["a", "b", "a"], ["a", "b", "c"]) == pytest.approx(1 / 6)


def test_predictions_outside_the_label_set_are_misses_for_their_true_label_only() -> None:
    truth, predicted = ["T1", "T2", "T2"], [None, "T9", "T2"]
    # T1: FN 1 -> 0; T2: TP 1, FN 1, and no false positive anywhere -> 2/3
    assert per_label_f1(truth, predicted, ["T1", "T2"]) == pytest.approx({"T1": 0.0, "T2": 2 / 3})
    matrix = confusion_matrix(truth, predicted, ["T1", "T2"])
    assert matrix.matrix == ((0, 0), (0, 1))
    assert matrix.unlisted == (1, 1)


def test_it_builds_the_confusion_matrix_with_rows_as_truth() -> None:
    matrix = confusion_matrix(TRUTH, PREDICTED, STAGES)

    assert matrix.as_dict() == {
        "labels": ["T1", "T2", "T3", "T4"],
        "matrix": [[1, 1, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]],
        "unlisted": [0, 0, 0, 0],
    }


def test_it_computes_accuracy_with_missing_answers_as_wrong() -> None:
    assert accuracy(TRUTH, PREDICTED) == pytest.approx(2 / 4)
    assert accuracy(["A", "B"], [None, "B"]) == pytest.approx(1 / 2)
    assert math.isnan(accuracy([], []))


def test_it_gives_macro_f1_one_for_perfect_predictions_over_the_labels_seen() -> None:
    assert macro_f1(["T1", "T2", "T4"], ["T1", "T2", "T4"]) == pytest.approx(1.0)


def test_it_rejects_bad_inputs() -> None:
    with pytest.raises(ValueError):
        macro_f1(["T1"], [])
    with pytest.raises(ValueError, match="outside the label set"):
        macro_f1(["T5"], ["T1"], STAGES)
    with pytest.raises(ValueError, match="repeats"):
        confusion_matrix(["T1"], ["T1"], ["T1", "T1"])
    assert math.isnan(macro_f1([], []))
