"""Report metrics: hand-computed values, and the libraries the field publishes with, called directly."""

from __future__ import annotations

import math

import pytest
import sacrebleu
from rouge_score import rouge_scorer

from annotations.scoring import classification, retrieval, text
from annotations.scoring.text import (
    bleu4,
    bleu_from_statistics,
    bleu_signature,
    bleu_statistics,
    bleu_tokenizer,
    contains_han,
    corpus_bleu4,
    mean_rouge_l,
    rouge_l,
)

CANDIDATES = [
    "Irregular thickening of the gastric antrum wall, about 1.5 cm.",
    "No enlarged perigastric lymph nodes.",
    "the cat sat on the mat",
    "Ulcerative lesion in the lesser curvature; biopsy advised.",
    "",
]
REFERENCES = [
    "Irregular wall thickening in the gastric antrum, about 1.8 cm, with enhancement.",
    "Several enlarged perigastric lymph nodes are seen.",
    "the cat is on the mat",
    "An ulcerative lesion at the lesser curvature of the gastric body.",
    "Normal study.",
]


def test_it_computes_rouge_l_from_the_longest_common_subsequence() -> None:
    # LCS = "the cat on the mat" = 5 tokens; P = R = 5/6, so F = 5/6
    assert rouge_l("the cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)


def test_it_balances_rouge_l_precision_and_recall() -> None:
    # LCS = "polyp in the antrum" = 4; P = 4/4, R = 4/9; F = 2 * (4/9) / (13/9) = 8/13
    score = rouge_l("polyp in the antrum", "a small polyp is seen in the gastric antrum")

    assert score == pytest.approx(8 / 13)


def test_it_ignores_case_spacing_and_punctuation_in_rouge_l() -> None:
    assert rouge_l("The  Cat\nsat.", "the cat, sat") == pytest.approx(1.0)


def test_it_gives_rouge_l_zero_for_empty_missing_or_unrelated_text() -> None:
    assert rouge_l("", "the cat") == 0.0
    assert rouge_l(None, "the cat") == 0.0
    assert rouge_l("the cat", "   ") == 0.0
    assert rouge_l("gastric ulcer", "normal mucosa") == 0.0


def test_rouge_l_is_rouge_score_itself_on_english_reports() -> None:
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    expected = [
        scorer.score(reference, candidate)["rougeL"].fmeasure
        for candidate, reference in zip(CANDIDATES, REFERENCES, strict=True)
    ]

    assert [rouge_l(c, r) for c, r in zip(CANDIDATES, REFERENCES, strict=True)] == expected
    assert mean_rouge_l(CANDIDATES, REFERENCES) == pytest.approx(sum(expected) / len(expected))


def test_it_scores_chinese_reports_one_character_per_token() -> None:
    # rouge-score's own tokenizer deletes every Chinese character: it would score 0 here.
    default = rouge_scorer.RougeScorer(["rougeL"]).score("胃窦可见溃疡", "胃窦见溃疡")
    assert default["rougeL"].fmeasure == 0.0
    # 胃 窦 见 溃 疡 against 胃 窦 可 见 溃 疡: LCS 5, P = 5/5, R = 5/6, F = 10/11
    assert rouge_l("胃窦见溃疡", "胃窦可见溃疡") == pytest.approx(10 / 11)


def test_it_keeps_latin_words_whole_and_drops_punctuation_in_chinese_reports() -> None:
    # ct 示 胃 壁 增 厚 against ct 显 示 胃 壁 增 厚: LCS 6, P = 1, R = 6/7, F = 12/13.
    # Full-width "ＣＴ" is NFKC-normalised to "ct"; "，" and "。" are not tokens.
    assert rouge_l("ＣＴ示胃壁增厚。", "CT显示，胃壁增厚") == pytest.approx(12 / 13)


def test_it_computes_sentence_bleu4_with_exp_smoothing_by_hand() -> None:
    # 1-grams 5/6; 2-grams "the cat", "on the", "the mat" of 5 -> 3/5; 3-grams "on the mat" 1/4;
    # 4-grams 0 of 3 -> 'exp' smoothing 1 / (2 * 3); equal lengths, no brevity penalty:
    # (5/6 * 3/5 * 1/4 * 1/6) ** (1/4) = (1/48) ** (1/4)
    score = bleu4("the cat sat on the mat", "the cat is on the mat")

    assert score == pytest.approx((1 / 48) ** 0.25)


def test_it_applies_the_brevity_penalty_with_effective_order() -> None:
    # only orders 1 and 2 exist in a 2-token candidate, both precise (effective order 2);
    # brevity penalty: c = 2, r = 6 -> exp(1 - 6/2) = exp(-2)
    assert bleu4("the cat", "the cat sat on the mat") == pytest.approx(math.exp(-2))


def test_it_gives_bleu4_one_to_an_exact_match_and_zero_without_shared_words() -> None:
    report = "irregular thickening of the gastric wall at the antrum"

    assert bleu4(report, report) == pytest.approx(1.0)
    assert bleu4("normal study", report) == 0.0
    assert bleu4("", report) == 0.0
    assert bleu4(None, report) == 0.0


def test_bleu4_is_case_sensitive_as_sacrebleu_is_by_default() -> None:
    assert bleu4("The cat sat on the mat", "the cat sat on the mat") < 1.0


def test_it_treats_a_report_as_one_segment_whatever_its_line_breaks() -> None:
    # sacrebleu's 13a would glue "wall-" + line break + "thickening" into one word.
    candidate, reference = "gastric wall-\nthickening   seen", "gastric wall- thickening seen"

    assert sacrebleu.sentence_bleu(candidate, [reference]).score < 50
    assert bleu4(candidate, reference) == pytest.approx(1.0)


def test_it_computes_corpus_bleu4_from_summed_counts_by_hand() -> None:
    # report 1: lengths 6/6, matches 5 3 1 0 of 6 5 4 3; report 2: lengths 2/2, matches 2 1 of 2 1
    # summed: 7/8, 4/6, 1/4, and 0/3 -> 'exp' smoothing 1/6; lengths equal, no penalty
    score = corpus_bleu4(
        ["the cat sat on the mat", "a polyp"], ["the cat is on the mat", "a polyp"]
    )

    assert score == pytest.approx((7 / 8 * 4 / 6 * 1 / 4 * 1 / 6) ** 0.25)


def test_bleu4_is_sacrebleu_itself_on_english_reports() -> None:
    corpus = sacrebleu.corpus_bleu(CANDIDATES, [REFERENCES])

    assert corpus_bleu4(CANDIDATES, REFERENCES) == pytest.approx(corpus.score / 100)
    for candidate, reference in zip(CANDIDATES, REFERENCES, strict=True):
        sentence = sacrebleu.sentence_bleu(candidate, [reference])
        assert bleu4(candidate, reference) == pytest.approx(sentence.score / 100)


def test_it_uses_sacrebleus_chinese_tokenizer_for_chinese_reports() -> None:
    candidates = ["胃窦见溃疡", "胃壁增厚，CT示淋巴结肿大"]
    references = ["胃窦可见溃疡", "CT示胃壁增厚，周围淋巴结肿大"]

    assert bleu_tokenizer([*candidates, *references]) == "zh"
    expected = sacrebleu.corpus_bleu(candidates, [references], tokenize="zh").score / 100
    assert corpus_bleu4(candidates, references) == pytest.approx(expected)
    # 1-grams 5/5, 2-grams 3/4, 3-grams 1/3, 4-grams 0/2 -> 1/4; brevity exp(1 - 6/5)
    assert bleu4("胃窦见溃疡", "胃窦可见溃疡") == pytest.approx(math.exp(-0.2) * (1 / 16) ** 0.25)
    # Without it, each Chinese sentence is one "word" and shares nothing.
    assert bleu4("胃窦见溃疡", "胃窦可见溃疡", tokenize="13a") == 0.0


def test_it_picks_the_13a_tokenizer_for_text_without_chinese() -> None:
    assert bleu_tokenizer(["Gastric wall thickening", None, ""]) == "13a"
    assert bleu_tokenizer(["Gastric wall", "胃"]) == "zh"
    assert contains_han("CT示") and not contains_han("CT, ＣＴ")
    assert "tok:zh" in bleu_signature("zh") and "smooth:exp" in bleu_signature("zh")


def test_bleu_statistics_resum_to_the_corpus_score_of_any_resample() -> None:
    rows = bleu_statistics(CANDIDATES, REFERENCES)

    assert rows.shape == (5, 10)
    assert bleu_from_statistics(rows) == pytest.approx(corpus_bleu4(CANDIDATES, REFERENCES))
    picked = [0, 0, 3, 2]
    resampled = corpus_bleu4([CANDIDATES[i] for i in picked], [REFERENCES[i] for i in picked])
    assert bleu_from_statistics(rows[picked]) == pytest.approx(resampled)
    assert math.isnan(bleu_from_statistics(rows[:0]))


def test_it_rejects_unequal_corpora_and_returns_nan_when_empty() -> None:
    with pytest.raises(ValueError):
        corpus_bleu4(["a"], [])
    with pytest.raises(ValueError):
        mean_rouge_l(["a"], ["a", "b"])
    with pytest.raises(ValueError):
        bleu_statistics([], ["a"])
    assert math.isnan(corpus_bleu4([], []))
    assert math.isnan(mean_rouge_l([], []))


def test_it_keeps_the_older_metric_names_importable() -> None:
    assert text.macro_f1 is classification.macro_f1
    assert text.recall_at_k is retrieval.recall_at_k
    assert text.median_rank is retrieval.median_rank
