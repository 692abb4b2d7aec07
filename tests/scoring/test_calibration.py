"""Confidence from log-probabilities, ECE, Brier and calibration shift, checked against
scikit-learn (`calibration_curve`, `brier_score_loss`), the bootstrap module and hand sums."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from annotations.scoring.bootstrap import bootstrap_mean
from annotations.scoring.calibration import (
    CalibrationSettings,
    brier_score,
    calibration_by,
    calibration_group,
    calibration_shift,
    expected_calibration_error,
    letter_confidence,
    reliability_bins,
)

LETTERS = ["A", "B", "C", "D", "E"]


def _position(token: str, top: dict[str, float]) -> dict:
    """One generated token in OpenAI's shape, with its top alternatives given as probabilities."""
    return {
        "token": token,
        "logprob": math.log(top[token]) if token in top else -5.0,
        "bytes": list(token.encode()),
        "top_logprobs": [
            {"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in top.items()
        ],
    }


# --- the confidence rule --------------------------------------------------------------------


def test_letter_first_is_its_probability_among_the_letters_there() -> None:
    content = [
        _position("B", {"B": 0.6, "A": 0.2, "C": 0.1, "The": 0.05}),
        _position(".", {".": 0.9}),
    ]
    # Renormalised over the letters only: 0.6 / (0.6 + 0.2 + 0.1).
    assert letter_confidence(content, "B", LETTERS) == pytest.approx(0.6 / 0.9)


def test_letter_after_the_answer_is_reads_the_first_position_holding_a_letter() -> None:
    content = [
        _position("The", {"The": 0.9, "I": 0.05}),
        _position(" answer", {" answer": 0.99}),
        _position(" is", {" is": 0.98, ":": 0.01}),
        _position(" C", {" C": 0.5, " D": 0.25, " E": 0.05, " maybe": 0.1}),
        _position(".", {".": 1.0}),
    ]
    assert letter_confidence(content, "C", LETTERS) == pytest.approx(0.5 / 0.8)


def test_fewer_letters_than_options_renormalise_over_those_present() -> None:
    # Five options, only two letters in the top list: the rest have no mass there.
    content = [_position("A", {"A": 0.7, "(A": 0.1, "D": 0.1, "Answer": 0.05})]
    # "A" and "(A" read as the same letter and add up.
    assert letter_confidence(content, "A", LETTERS) == pytest.approx(0.8 / 0.9)
    assert letter_confidence(content, "D", LETTERS) == pytest.approx(0.1 / 0.9)
    # A letter absent from the position the rule reads: the model put no mass on it.
    assert letter_confidence(content, "B", LETTERS) == 0.0


def test_no_letter_anywhere_or_no_reading_gives_none() -> None:
    content = [
        _position("I", {"I": 0.8, "Sorry": 0.1}),
        _position(" cannot", {" cannot": 0.9, " can": 0.05}),
    ]
    assert letter_confidence(content, "A", LETTERS) is None
    # VLMEvalKit read no letter: no confidence, whatever the log-probabilities say.
    assert letter_confidence([_position("A", {"A": 1.0})], "", LETTERS) is None
    # The endpoint gave none.
    assert letter_confidence(None, "A", LETTERS) is None
    assert letter_confidence([], "A", LETTERS) is None


def test_letters_beyond_the_options_do_not_count() -> None:
    content = [_position("B", {"B": 0.5, "F": 0.4, "a": 0.1})]
    assert letter_confidence(content, "B", ["A", "B", "C"]) == pytest.approx(1.0)


# --- ECE, Brier, reliability ----------------------------------------------------------------

RNG = np.random.default_rng(11)
CONF = RNG.random(400)
CORRECT = RNG.random(400) < CONF**1.5  # over-confident, as models are
# Confidences exactly on bin edges: (lo, hi] puts k/15 in bin k-1, as scikit-learn does.
EDGES = np.array([0.0, 1 / 15, 2 / 15, 0.5, 14 / 15, 1.0, 1.0, 0.2])
EDGE_HITS = np.array([0, 0, 1, 1, 1, 1, 0, 1], dtype=bool)


@pytest.mark.parametrize(("conf", "correct"), [(CONF, CORRECT), (EDGES, EDGE_HITS)])
def test_reliability_bins_are_scikit_learns_calibration_curve(conf, correct) -> None:
    prob_true, prob_pred = calibration_curve(correct, conf, n_bins=15, strategy="uniform")
    bins = reliability_bins(conf, correct, bins=15)
    assert [b["accuracy"] for b in bins] == pytest.approx(list(prob_true))
    assert [b["mean_confidence"] for b in bins] == pytest.approx(list(prob_pred))


@pytest.mark.parametrize(("conf", "correct"), [(CONF, CORRECT), (EDGES, EDGE_HITS)])
def test_ece_weights_scikit_learns_bins_by_their_counts(conf, correct) -> None:
    prob_true, prob_pred = calibration_curve(correct, conf, n_bins=15, strategy="uniform")
    # scikit-learn's own binning rule, for the counts its curve leaves out.
    ids = np.searchsorted(np.linspace(0, 1, 16)[1:-1], conf)
    counts = np.bincount(ids, minlength=15)
    counts = counts[counts > 0]
    expected = float(np.sum(counts / len(conf) * np.abs(prob_true - prob_pred)))
    assert expected_calibration_error(conf, correct, bins=15) == pytest.approx(expected)


def test_brier_is_scikit_learns_brier_score_loss() -> None:
    assert brier_score(CONF, CORRECT) == pytest.approx(brier_score_loss(CORRECT, CONF))
    assert brier_score(EDGES, EDGE_HITS) == pytest.approx(brier_score_loss(EDGE_HITS, EDGES))


def test_a_worked_example_by_hand() -> None:
    # Bins of width 1/15: 0.95 and 0.99 share the last bin (1 right of 2); 0.5 is alone, right.
    conf, correct = [0.95, 0.99, 0.5], [True, False, True]
    expected = (2 / 3) * abs(0.5 - 0.97) + (1 / 3) * abs(1.0 - 0.5)
    assert expected_calibration_error(conf, correct) == pytest.approx(expected)
    group = calibration_group(conf, correct, CalibrationSettings(resamples=50))
    assert group["mean_confidence"] == pytest.approx(0.8133333333)
    assert group["accuracy"] == pytest.approx(2 / 3)
    assert group["gap"] == pytest.approx(0.8133333333 - 2 / 3)
    assert group["brier"] == pytest.approx((0.05**2 + 0.99**2 + 0.5**2) / 3)
    assert group["n"] == 3


def test_accuracy_interval_uses_the_bootstrap_modules_draws() -> None:
    group = calibration_group(CONF, CORRECT, CalibrationSettings(resamples=300, seed=4))
    expected = bootstrap_mean(CORRECT.astype(float), resamples=300, seed=4)
    assert group["intervals"]["accuracy"] == pytest.approx([expected.low, expected.high])
    for name in ("ece", "brier", "mean_confidence", "gap"):
        low, high = group["intervals"][name]
        assert low <= group[name] <= high


def test_empty_group_has_no_figures() -> None:
    group = calibration_group([], [])
    assert group["n"] == 0 and group["ece"] is None and group["bins"] == []


def test_confidences_outside_zero_one_are_refused() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        expected_calibration_error([1.2], [True])


def test_breakdowns_leave_out_answers_without_confidence() -> None:
    records = [
        {"confidence": 0.9, "hit": True, "modality": "CT"},
        {"confidence": 0.8, "hit": False, "modality": "CT"},
        {"confidence": None, "hit": True, "modality": "CT"},
        {"confidence": 0.6, "hit": True, "modality": "MRI"},
        {"confidence": 0.7, "hit": True, "modality": ""},
    ]
    result = calibration_by(records, ["modality"], CalibrationSettings(resamples=20))
    assert result["n"] == 5 and result["rated"] == 4
    assert result["overall"]["n"] == 4
    assert result["by"]["modality"]["CT"]["n"] == 2
    assert result["by"]["modality"]["CT"]["accuracy"] == 0.5
    assert result["by"]["modality"]["MRI"]["mean_confidence"] == pytest.approx(0.6)
    assert set(result["by"]["modality"]) == {"CT", "MRI"}


# --- calibration shift on twins --------------------------------------------------------------


def _family(
    n: int, clean: tuple[float, bool], mild: tuple[float, bool], severe: tuple[float, bool]
):
    base = n * 10
    return [
        {
            "item": base,
            "clean_twin": None,
            "severity": "clean",
            "confidence": clean[0],
            "hit": clean[1],
        },
        {
            "item": base + 1,
            "clean_twin": base,
            "severity": "mild",
            "confidence": mild[0],
            "hit": mild[1],
        },
        {
            "item": base + 2,
            "clean_twin": base,
            "severity": "severe",
            "confidence": severe[0],
            "hit": severe[1],
        },
    ]


def test_calibration_shift_is_paired_on_twins() -> None:
    records = []
    for n in range(6):
        records += _family(n, (0.9, True), (0.85, n < 4), (0.8, n < 1))
    # An orphan degraded item (its clean twin unanswered) and a clean item without twins.
    records.append(
        {"item": 999, "clean_twin": 998, "severity": "severe", "confidence": 0.1, "hit": True}
    )
    records.append(
        {"item": 500, "clean_twin": None, "severity": "clean", "confidence": 0.2, "hit": False}
    )
    shift = calibration_shift(records, CalibrationSettings(resamples=200))
    assert shift is not None and shift["families"] == 6
    levels = shift["levels"]
    assert levels["clean"]["n"] == levels["mild"]["n"] == levels["severe"]["n"] == 6
    assert levels["severe"]["value"]["accuracy"] == pytest.approx(1 / 6)
    assert levels["severe"]["value"]["gap"] == pytest.approx(0.8 - 1 / 6)
    step = shift["steps"]["mild>severe"]["value"]
    assert step["accuracy"] == pytest.approx(1 / 6 - 4 / 6)
    assert step["mean_confidence"] == pytest.approx(-0.05)
    # ECE per level by hand: every answer in one bin, so ECE = |accuracy - confidence|.
    assert shift["steps"]["clean>severe"]["value"]["ece"] == pytest.approx((0.8 - 1 / 6) - 0.1)
    low, high = shift["steps"]["clean>severe"]["intervals"]["accuracy"]
    assert low <= -5 / 6 <= high


def test_no_twins_no_shift() -> None:
    assert (
        calibration_shift([{"item": 1, "clean_twin": None, "confidence": 0.5, "hit": True}]) is None
    )
