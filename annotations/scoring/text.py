"""Text and ranking metrics for Gastric-X tasks: report generation, retrieval, TNM classification.

Report metrics compare lower-cased whitespace tokens, so they are only meaningful for languages
written with spaces; a Chinese report should be segmented (one token per character will do)
before it is passed in.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence

BLEU_MAX_ORDER = 4


def _tokens(text: str) -> list[str]:
    return text.lower().split()


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1: the harmonic mean of LCS/len(candidate) and LCS/len(reference).

    F1 (beta = 1), not the beta = 1.2 of the COCO caption toolkit, so the score is symmetric in
    its two arguments. 0.0 when either text has no tokens.
    """
    candidate_tokens, reference_tokens = _tokens(candidate), _tokens(reference)
    if not candidate_tokens or not reference_tokens:
        return 0.0
    common = _lcs_length(candidate_tokens, reference_tokens)
    if common == 0:
        return 0.0
    precision = common / len(candidate_tokens)
    recall = common / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)


def _lcs_length(first: Sequence[str], second: Sequence[str]) -> int:
    # One row of the dynamic-programming table at a time: reports can be hundreds of tokens.
    previous = [0] * (len(second) + 1)
    for token in first:
        current = [0]
        for j, other in enumerate(second, start=1):
            current.append(previous[j - 1] + 1 if token == other else max(previous[j], current[-1]))
        previous = current
    return previous[-1]


def bleu4(candidate: str, reference: str) -> float:
    """Sentence BLEU-4 against one reference, with brevity penalty and add-one smoothing.

    Smoothing is Lin & Och's (2004) BLEU+1, "smoothing 2" in Chen & Cherry (2014): the clipped
    n-gram matches and the n-gram total both get +1 for n = 2..4, while unigrams stay unsmoothed,
    so a candidate sharing no word with the reference scores exactly 0. Weights are uniform
    (geometric mean of the four precisions); the brevity penalty is exp(1 - r/c) when the
    candidate (c tokens) is shorter than the reference (r tokens). 0.0 for an empty candidate.
    """
    candidate_tokens, reference_tokens = _tokens(candidate), _tokens(reference)
    if not candidate_tokens or not reference_tokens:
        return 0.0
    log_precision_sum = 0.0
    for order in range(1, BLEU_MAX_ORDER + 1):
        matches, total = _clipped_matches(candidate_tokens, reference_tokens, order)
        if order > 1:
            matches, total = matches + 1, total + 1
        if matches == 0:
            return 0.0
        log_precision_sum += math.log(matches / total)
    c, r = len(candidate_tokens), len(reference_tokens)
    brevity_penalty = 1.0 if c > r else math.exp(1 - r / c)
    return brevity_penalty * math.exp(log_precision_sum / BLEU_MAX_ORDER)


def _clipped_matches(candidate: list[str], reference: list[str], order: int) -> tuple[int, int]:
    candidate_ngrams = _ngrams(candidate, order)
    reference_ngrams = _ngrams(reference, order)
    matches = sum(min(count, reference_ngrams[gram]) for gram, count in candidate_ngrams.items())
    return matches, sum(candidate_ngrams.values())


def _ngrams(tokens: list[str], order: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + order]) for i in range(len(tokens) - order + 1))


def recall_at_k(ranks: Sequence[int], k: int) -> float:
    """Share of queries whose correct item is ranked within the top `k` (ranks start at 1).

    NaN with no queries. Raises ValueError on a rank below 1 or k below 1.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    _check_ranks(ranks)
    if not ranks:
        return math.nan
    return sum(rank <= k for rank in ranks) / len(ranks)


def median_rank(ranks: Sequence[int]) -> float:
    """Median 1-based rank of the correct item (mean of the two middle ranks when even); NaN if empty."""
    _check_ranks(ranks)
    return float(statistics.median(ranks)) if ranks else math.nan


def _check_ranks(ranks: Sequence[int]) -> None:
    if any(rank < 1 for rank in ranks):
        raise ValueError("ranks start at 1")


def macro_f1(truth: Sequence[str], pred: Sequence[str]) -> float:
    """Unweighted mean of per-label F1 over every label seen in `truth` or `pred`.

    A label only ever predicted (never true) contributes F1 = 0, as in scikit-learn's default,
    so inventing stages is penalised. NaN with no items; ValueError on unequal lengths.
    """
    if len(truth) != len(pred):
        raise ValueError(f"{len(truth)} true labels but {len(pred)} predictions")
    if not truth:
        return math.nan
    true_positives: Counter[str] = Counter()
    false_positives: Counter[str] = Counter()
    false_negatives: Counter[str] = Counter()
    for expected, predicted in zip(truth, pred, strict=True):
        if expected == predicted:
            true_positives[expected] += 1
        else:
            false_positives[predicted] += 1
            false_negatives[expected] += 1
    labels = set(truth) | set(pred)
    scores = [
        2
        * true_positives[label]
        / (2 * true_positives[label] + false_positives[label] + false_negatives[label])
        for label in labels
    ]
    return sum(scores) / len(scores)
