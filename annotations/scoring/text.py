"""Report-generation metrics: ROUGE-L with Google's `rouge-score`, BLEU-4 with `sacrebleu`.

API (all scores are fractions in [0, 1], sacrebleu's 0-100 divided by 100):
- `rouge_l(candidate, reference) -> float`: one report's ROUGE-L F1.
- `mean_rouge_l(candidates, references) -> float`: the corpus ROUGE-L, the mean of the items' F1
  (as `rouge-score`'s own aggregation and Hugging Face `evaluate` report it); NaN when empty.
- `bleu4(candidate, reference, tokenize=None) -> float`: one report's sentence BLEU-4.
- `corpus_bleu4(candidates, references, tokenize=None) -> float`: corpus BLEU-4 (n-gram counts
  summed over all reports before the precisions are taken, as BLEU is defined); NaN when empty.
- `bleu_statistics(...) -> np.ndarray` and `bleu_from_statistics(rows) -> float`: the per-report
  sufficient statistics and the corpus BLEU of any subset of them, for bootstrap intervals.
- `bleu_tokenizer(texts) -> "zh" | "13a"` and `bleu_signature(tokenize) -> str`.

Tokenisation, the part that decides the numbers:
- ROUGE-L: when neither text holds a Han character, `rouge-score`'s default tokenizer exactly
  (lower-case, every run of characters other than a-z/0-9 is a separator, no stemming: the
  default of `rouge-score` and of `evaluate`). That tokenizer deletes every Chinese character, so
  when either text holds Han characters both are NFKC-normalised (full-width letters and digits
  become ASCII), lower-cased and split into one token per Han character plus the same a-z/0-9
  runs; punctuation is dropped. Character tokens are the usual choice for Chinese ROUGE and need
  no word segmenter (whose dictionary would itself change the scores).
- BLEU-4: sacrebleu's defaults (case-sensitive, 'exp' smoothing, one reference) with its `13a`
  tokenizer, or its `zh` tokenizer (each Chinese character a token, `13a` rules elsewhere) as
  soon as any candidate or reference of the corpus holds a Han character; `13a` and `zh` agree
  on text without Chinese. Sentence BLEU uses sacrebleu's effective order, as it recommends.
- A report is one segment: line breaks and runs of spaces become single spaces.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

# Backwards-compatible names: these metrics lived here before they got their own modules.
from annotations.scoring.classification import macro_f1
from annotations.scoring.retrieval import median_rank, recall_at_k

__all__ = [
    "bleu4",
    "bleu_from_statistics",
    "bleu_signature",
    "bleu_statistics",
    "bleu_tokenizer",
    "contains_han",
    "corpus_bleu4",
    "macro_f1",
    "mean_rouge_l",
    "median_rank",
    "recall_at_k",
    "rouge_l",
]

_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HAN_RE = re.compile(f"[{_HAN}]")
_HAN_TOKEN_RE = re.compile(f"[{_HAN}]|[a-z0-9]+")
BLEU_MAX_ORDER = 4
# sacrebleu's statistics row: hypothesis length, reference length, matches and totals per order.
BLEU_STATISTICS_WIDTH = 2 + 2 * BLEU_MAX_ORDER


def contains_han(text: str) -> bool:
    """Whether `text` holds at least one Chinese (Han) character."""
    return bool(_HAN_RE.search(text))


class HanCharacterTokenizer:
    """`rouge-score` tokenizer for Chinese: one token per Han character, a-z/0-9 runs as words."""

    def tokenize(self, text: str) -> list[str]:
        return _HAN_TOKEN_RE.findall(unicodedata.normalize("NFKC", text).lower())


@functools.cache
def _rouge_scorer(han: bool) -> Any:
    # rouge-score imports nltk, which takes seconds: load it when a report is first scored, not
    # with every import of `annotations.scoring` (web and worker start-up).
    from rouge_score import rouge_scorer

    if han:
        return rouge_scorer.RougeScorer(["rougeL"], tokenizer=HanCharacterTokenizer())
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def _bleu_class() -> Any:
    from sacrebleu.metrics.bleu import BLEU  # a third of a second: loaded on first use too

    return BLEU


def _bleu(**options: Any) -> Any:
    return _bleu_class()(**options)


def _segment(text: str | None) -> str:
    return " ".join((text or "").split())


def rouge_l(candidate: str | None, reference: str) -> float:
    """ROUGE-L F1 (beta = 1) of one generated report against its reference; 0.0 if either is empty.

    F1 rather than the beta = 1.2 of the COCO caption toolkit: `rouge-score` reports F1.
    """
    candidate, reference = candidate or "", reference or ""
    scorer = _rouge_scorer(contains_han(candidate) or contains_han(reference))
    # rouge-score takes the reference ("target") first.
    return float(scorer.score(reference, candidate)["rougeL"].fmeasure)


def mean_rouge_l(candidates: Sequence[str | None], references: Sequence[str]) -> float:
    """Corpus ROUGE-L: the mean of the items' F1. NaN with no items; ValueError on unequal lengths."""
    _check_lengths(candidates, references)
    if not references:
        return math.nan
    return float(np.mean([rouge_l(c, r) for c, r in zip(candidates, references, strict=True)]))


def bleu_tokenizer(texts: Iterable[str | None]) -> str:
    """sacrebleu's tokenizer name for a corpus: `"zh"` if any text holds Han characters, else `"13a"`."""
    return "zh" if any(contains_han(text or "") for text in texts) else "13a"


def bleu_signature(tokenize: str) -> str:
    """sacrebleu's signature of our corpus BLEU with `tokenize` (quote it beside published scores)."""
    bleu = _bleu(tokenize=tokenize)
    # sacrebleu learns the number of references (part of the signature) only by scoring.
    bleu.corpus_score(["x"], [["x"]])
    return str(bleu.get_signature())


def bleu4(candidate: str | None, reference: str, tokenize: str | None = None) -> float:
    """sacrebleu's sentence BLEU-4 of one report ('exp' smoothing, effective order), in [0, 1].

    `tokenize` defaults to `bleu_tokenizer([candidate, reference])`; pass the corpus' choice to
    score items the way the corpus is scored.
    """
    tokenize = tokenize or bleu_tokenizer([candidate, reference])
    bleu = _bleu(tokenize=tokenize, effective_order=True)
    return bleu.sentence_score(_segment(candidate), [_segment(reference)]).score / 100


def corpus_bleu4(
    candidates: Sequence[str | None], references: Sequence[str], tokenize: str | None = None
) -> float:
    """sacrebleu's corpus BLEU-4 in [0, 1], one reference per report. NaN with no reports."""
    _check_lengths(candidates, references)
    if not references:
        return math.nan
    tokenize = tokenize or bleu_tokenizer([*candidates, *references])
    bleu = _bleu(tokenize=tokenize)
    score = bleu.corpus_score(
        [_segment(c) for c in candidates], [[_segment(r) for r in references]]
    )
    return score.score / 100


def bleu_statistics(
    candidates: Sequence[str | None], references: Sequence[str], tokenize: str | None = None
) -> np.ndarray:
    """One row of BLEU sufficient statistics per report (shape `(n, 10)`, integers).

    Columns: candidate length, reference length, matched 1..4-grams, candidate 1..4-grams,
    exactly what sacrebleu sums over a corpus; `bleu_from_statistics` of all rows equals
    `corpus_bleu4`, and of a resample of rows, the corpus BLEU of that resample.
    """
    _check_lengths(candidates, references)
    tokenize = tokenize or bleu_tokenizer([*candidates, *references])
    bleu = _bleu(tokenize=tokenize)
    rows = np.zeros((len(references), BLEU_STATISTICS_WIDTH), dtype=np.int64)
    for row, (candidate, reference) in enumerate(zip(candidates, references, strict=True)):
        score = bleu.corpus_score([_segment(candidate)], [[_segment(reference)]])
        rows[row] = [score.sys_len, score.ref_len, *score.counts, *score.totals]
    return rows


def bleu_from_statistics(rows: np.ndarray) -> float:
    """Corpus BLEU-4 in [0, 1] of summed `bleu_statistics` rows; NaN for no rows."""
    if len(rows) == 0:
        return math.nan
    total = np.asarray(rows, dtype=np.int64).sum(axis=0).tolist()
    score = _bleu_class().compute_bleu(
        correct=total[2 : 2 + BLEU_MAX_ORDER],
        total=total[2 + BLEU_MAX_ORDER :],
        sys_len=total[0],
        ref_len=total[1],
        smooth_method="exp",
    )
    return score.score / 100


def _check_lengths(candidates: Sequence[object], references: Sequence[object]) -> None:
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates but {len(references)} references")
