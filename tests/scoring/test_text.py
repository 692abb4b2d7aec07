from __future__ import annotations

import math

import pytest

from annotations.scoring.text import bleu4, macro_f1, median_rank, recall_at_k, rouge_l


def test_it_computes_rouge_l_from_the_longest_common_subsequence() -> None:
    # LCS = "the cat on the mat" = 5 tokens; P = R = 5/6, so F = 5/6
    assert rouge_l("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)


def test_it_balances_rouge_l_precision_and_recall() -> None:
    # LCS = "polyp in the antrum" = 4; P = 4/4, R = 4/9; F = 2 * (4/9) / (13/9) = 8/13
    score = rouge_l("polyp in the antrum", "a small polyp is seen in the gastric antrum")

    assert score == pytest.approx(8 / 13)


def test_it_ignores_case_and_spacing_in_rouge_l() -> None:
    assert rouge_l("The  Cat\nsat", "the cat sat") == pytest.approx(1.0)


def test_it_gives_rouge_l_zero_for_empty_or_unrelated_text() -> None:
    assert rouge_l("", "the cat") == 0.0
    assert rouge_l("the cat", "   ") == 0.0
    assert rouge_l("gastric ulcer", "normal mucosa") == 0.0


def test_it_computes_smoothed_bleu4_by_hand() -> None:
    # unigrams: the x2, cat, on, mat match of 6 -> 5/6
    # bigrams: "the cat", "on the", "the mat" of 5 -> (3+1)/(5+1) = 4/6
    # trigrams: "on the mat" of 4 -> (1+1)/(4+1) = 2/5
    # 4-grams: none of 3 -> (0+1)/(3+1) = 1/4
    # equal lengths, no brevity penalty: (5/6 * 4/6 * 2/5 * 1/4)^(1/4) = (1/18)^(1/4) = 0.485492
    score = bleu4("the cat sat on the mat", "the cat is on the mat")

    assert score == pytest.approx(0.485492, abs=1e-6)


def test_it_applies_the_brevity_penalty() -> None:
    # every n-gram precision is 1 (2/2 unigrams, (1+1)/(1+1), (0+1)/(0+1), (0+1)/(0+1))
    # brevity penalty: c = 2, r = 6 -> exp(1 - 6/2) = exp(-2)
    assert bleu4("the cat", "the cat sat on the mat") == pytest.approx(math.exp(-2))


def test_it_gives_bleu4_one_to_an_exact_match_and_zero_without_shared_words() -> None:
    report = "irregular thickening of the gastric wall at the antrum"

    assert bleu4(report, report) == pytest.approx(1.0)
    assert bleu4("normal study", report) == 0.0
    assert bleu4("", report) == 0.0


def test_it_computes_recall_at_k() -> None:
    ranks = [1, 3, 5, 10, 2]

    assert recall_at_k(ranks, 1) == pytest.approx(1 / 5)
    assert recall_at_k(ranks, 5) == pytest.approx(4 / 5)
    assert recall_at_k(ranks, 10) == pytest.approx(1.0)


def test_it_computes_the_median_rank() -> None:
    assert median_rank([1, 3, 5, 10, 2]) == 3.0
    # even count: mean of the middle ranks 2 and 3
    assert median_rank([4, 1, 2, 3]) == 2.5


def test_it_returns_nan_for_ranking_metrics_without_queries() -> None:
    assert math.isnan(recall_at_k([], 5))
    assert math.isnan(median_rank([]))


def test_it_rejects_ranks_and_k_below_one() -> None:
    with pytest.raises(ValueError):
        recall_at_k([0, 1], 1)
    with pytest.raises(ValueError):
        recall_at_k([1], 0)
    with pytest.raises(ValueError):
        median_rank([0])


def test_it_computes_macro_f1_by_hand() -> None:
    # T1: TP 1, FP 0, FN 1 -> 2/3; T2: TP 1, FP 2, FN 0 -> 2/4; T3: TP 0, FN 1 -> 0
    # macro F1 = (2/3 + 1/2 + 0) / 3 = 7/18
    score = macro_f1(["T1", "T1", "T2", "T3"], ["T1", "T2", "T2", "T2"])

    assert score == pytest.approx(7 / 18)


def test_it_penalises_labels_that_are_only_predicted() -> None:
    # a: TP 1, FN 1 -> 2/3; b (never true): FP 1 -> 0; mean 1/3
    assert macro_f1(["a", "a"], ["a", "b"]) == pytest.approx(1 / 3)


def test_it_gives_macro_f1_one_for_perfect_predictions() -> None:
    assert macro_f1(["T1", "T2", "T4"], ["T1", "T2", "T4"]) == pytest.approx(1.0)


def test_it_rejects_mismatched_label_lists_and_returns_nan_when_empty() -> None:
    with pytest.raises(ValueError):
        macro_f1(["T1"], [])
    assert math.isnan(macro_f1([], []))
