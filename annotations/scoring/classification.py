"""Classification metrics over a fixed label set (TNM stage and its T/N/M components).

API:
- `accuracy(truth, predicted) -> float`: share of exact matches; a None prediction is wrong.
- `confusion_matrix(truth, predicted, labels) -> ConfusionMatrix`: rows are true labels,
  columns predicted labels, both in `labels` order, plus one "unlisted" count per row for
  predictions outside the label set (None included). `.as_dict()` is its JSON form.
- `per_label_f1(truth, predicted, labels, zero_division=0.0) -> dict[label, float]`.
- `macro_f1(truth, predicted, labels=None, zero_division=0.0) -> float`: the unweighted mean of
  `per_label_f1` over `labels`.

Conventions, as scikit-learn's `f1_score(..., labels=labels, average="macro")`:
- Every label of the fixed set counts, predicted or not: a true label never predicted has F1 0
  (recall 0), a label only ever predicted has F1 0 (precision 0).
- A label with neither support nor prediction has F1 = 0/0, replaced by `zero_division`:
  0.0 (scikit-learn's default, "warn"), 1.0, or NaN, which leaves the label out of the mean
  (scikit-learn's `zero_division=np.nan`). Use NaN when the label set is wider than the data
  (a stage that never occurs in the benchmark should not cap everyone's macro-F1).
- F1 is 2·TP / (2·TP + FP + FN), which equals the harmonic mean of precision and recall whenever
  both are defined.
- A prediction outside `labels` (or None) is a false negative for its true label and a false
  positive for no label. A true label outside `labels` raises ValueError: the data is wrong.
- With `labels=None` the set is every label seen in `truth` or `predicted` (None excluded),
  scikit-learn's default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ConfusionMatrix",
    "accuracy",
    "confusion_matrix",
    "encode_labels",
    "f1_from_confusion",
    "label_counts",
    "macro_f1",
    "per_label_f1",
]


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts of (true label, predicted label); `unlisted[i]` counts row i's other predictions."""

    labels: tuple[str, ...]
    matrix: tuple[tuple[int, ...], ...]
    unlisted: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "labels": list(self.labels),
            "matrix": [list(row) for row in self.matrix],
            "unlisted": list(self.unlisted),
        }


def _check_lengths(truth: Sequence[object], predicted: Sequence[object]) -> None:
    if len(truth) != len(predicted):
        raise ValueError(f"{len(truth)} true labels but {len(predicted)} predictions")


def _label_set(
    truth: Sequence[str], predicted: Sequence[str | None], labels: Sequence[str] | None
) -> list[str]:
    if labels is None:
        return sorted({*truth, *(p for p in predicted if p is not None)})
    if len(set(labels)) != len(labels):
        raise ValueError("the label set repeats a label")
    return list(labels)


def encode_labels(
    truth: Sequence[str], predicted: Sequence[str | None], labels: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Label indices of `truth` and `predicted`; an unlisted prediction gets `len(labels)`."""
    _check_lengths(truth, predicted)
    index = {label: position for position, label in enumerate(labels)}
    unknown = sorted({label for label in truth if label not in index})
    if unknown:
        raise ValueError(f"true labels outside the label set: {unknown}")
    true_codes = np.array([index[label] for label in truth], dtype=np.int64)
    predicted_codes = np.array(
        [
            index.get(label, len(labels)) if label is not None else len(labels)
            for label in predicted
        ],
        dtype=np.int64,
    )
    return true_codes, predicted_codes


def label_counts(true_codes: np.ndarray, predicted_codes: np.ndarray, n_labels: int) -> np.ndarray:
    """`(L, L + 1)` counts of (true code, predicted code); the last column: unlisted predictions."""
    flat = true_codes * (n_labels + 1) + predicted_codes
    return np.bincount(flat, minlength=n_labels * (n_labels + 1)).reshape(n_labels, n_labels + 1)


def f1_from_confusion(counts: np.ndarray, zero_division: float = 0.0) -> np.ndarray:
    """Per-label F1 from an `(L, L + 1)` count table (last column: unlisted predictions)."""
    n_labels = counts.shape[0]
    true_positives = np.diagonal(counts[:, :n_labels]).astype(float)
    predicted = counts[:, :n_labels].sum(axis=0)
    actual = counts.sum(axis=1)
    denominator = predicted + actual  # = 2·TP + FP + FN
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(denominator > 0, 2 * true_positives / denominator, zero_division)
    return scores


def accuracy(truth: Sequence[str], predicted: Sequence[str | None]) -> float:
    """Share of items whose prediction equals the truth; NaN with no items."""
    _check_lengths(truth, predicted)
    if not truth:
        return math.nan
    return sum(t == p for t, p in zip(truth, predicted, strict=True)) / len(truth)


def confusion_matrix(
    truth: Sequence[str], predicted: Sequence[str | None], labels: Sequence[str]
) -> ConfusionMatrix:
    """Counts of (true, predicted) over `labels`, with unlisted predictions counted per row."""
    labels = _label_set(truth, predicted, labels)
    counts = label_counts(*encode_labels(truth, predicted, labels), len(labels))
    return ConfusionMatrix(
        labels=tuple(labels),
        matrix=tuple(tuple(int(v) for v in row[: len(labels)]) for row in counts),
        unlisted=tuple(int(v) for v in counts[:, len(labels)]),
    )


def per_label_f1(
    truth: Sequence[str],
    predicted: Sequence[str | None],
    labels: Sequence[str] | None = None,
    zero_division: float = 0.0,
) -> dict[str, float]:
    """F1 of each label of the set; see the module docstring for the conventions."""
    labels = _label_set(truth, predicted, labels)
    counts = label_counts(*encode_labels(truth, predicted, labels), len(labels))
    return dict(zip(labels, f1_from_confusion(counts, zero_division).tolist(), strict=True))


def macro_f1(
    truth: Sequence[str],
    predicted: Sequence[str | None],
    labels: Sequence[str] | None = None,
    zero_division: float = 0.0,
) -> float:
    """Unweighted mean of the per-label F1 over the label set; NaN with no items.

    NaN also when every label's F1 is NaN (only possible with `zero_division=NaN`).
    """
    _check_lengths(truth, predicted)
    if not truth:
        return math.nan
    scores = per_label_f1(truth, predicted, labels, zero_division).values()
    kept = [score for score in scores if not math.isnan(score)]
    return sum(kept) / len(kept) if kept else math.nan
