"""Inter-rater agreement between clinicians: raw agreement, Cohen's kappa, weighted kappa, alpha.

Degenerate inputs never raise ZeroDivisionError. Where a statistic is undefined (no data, or
chance agreement already perfect so kappa is 0/0) the result is NaN, as scikit-learn returns and as
the definitions imply; the one exception is Krippendorff's alpha with no variation at all, which
is 1.0 (see `krippendorff_alpha_nominal`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import permutations
from typing import Literal, TypeVar

import numpy as np

UnitKey = TypeVar("UnitKey", bound=Hashable)


def percent_agreement(pairs: Iterable[tuple[Hashable, Hashable]]) -> float:
    """Share of (rater 1, rater 2) pairs with the same label; NaN when there are no pairs."""
    agreed = total = 0
    for first, second in pairs:
        total += 1
        agreed += first == second
    return agreed / total if total else math.nan


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa for two raters labelling the same items (nominal labels).

    NaN when there are no items, or when both raters gave one and the same label to every item
    (expected agreement is 1 and kappa is 0/0).
    """
    _check_paired(a, b)
    n = len(a)
    if n == 0:
        return math.nan
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    counts_a, counts_b = Counter(a), Counter(b)
    expected = sum(counts_a[label] * counts_b[label] for label in counts_a) / (n * n)
    return _kappa(observed, expected)


def _kappa(observed: float, expected: float) -> float:
    if math.isclose(expected, 1.0):
        return math.nan
    return (observed - expected) / (1.0 - expected)


def weighted_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    categories: Sequence[Hashable],
    weights: Literal["linear", "quadratic"] = "linear",
) -> float:
    """Cohen's weighted kappa for ordered `categories` (e.g. a 1–5 rubric score).

    Disagreement weight between the i-th and j-th category is |i-j|/(k-1), squared for
    "quadratic". NaN when there are no items, fewer than two categories, or no disagreement is
    expected by chance. A label outside `categories` raises ValueError.
    """
    _check_paired(a, b)
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"weights must be 'linear' or 'quadratic', not {weights!r}")
    position = {category: i for i, category in enumerate(categories)}
    k = len(position)
    if len(a) == 0 or k < 2:
        return math.nan
    unknown = (set(a) | set(b)) - position.keys()
    if unknown:
        raise ValueError(f"labels not in categories: {sorted(map(str, unknown))}")
    observed = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        observed[position[x], position[y]] += 1
    observed /= len(a)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    index = np.arange(k)
    weight = np.abs(index[:, None] - index[None, :]) / (k - 1)
    if weights == "quadratic":
        weight = weight**2
    expected_disagreement = float((weight * expected).sum())
    if math.isclose(expected_disagreement, 0.0, abs_tol=1e-15):
        return math.nan
    return 1.0 - float((weight * observed).sum()) / expected_disagreement


def _check_paired(a: Sequence[Hashable], b: Sequence[Hashable]) -> None:
    if len(a) != len(b):
        raise ValueError(f"raters labelled different numbers of items: {len(a)} and {len(b)}")


def krippendorff_alpha_nominal(units: Mapping[UnitKey, Sequence[Hashable | None]]) -> float:
    """Krippendorff's alpha for nominal labels: any number of raters, missing labels allowed.

    `units` maps each item to the labels it received (None = not rated). Units with fewer than
    two labels cannot be paired and are ignored (Krippendorff 2011). NaN when no unit has two
    labels. When every label is the same, observed and expected disagreement are both 0 and alpha
    is 0/0; we return 1.0, since the raters never disagreed (report n alongside it).
    """
    coincidences: defaultdict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for labels in units.values():
        present = [label for label in labels if label is not None]
        if len(present) < 2:
            continue
        # Each ordered pair of labels from different raters adds 1/(m-1) to the coincidence
        # matrix, so every pairable value contributes exactly 1 in total.
        for first, second in permutations(present, 2):
            coincidences[first, second] += 1.0 / (len(present) - 1)
    label_totals: defaultdict[Hashable, float] = defaultdict(float)
    for (first, _second), weight in coincidences.items():
        label_totals[first] += weight
    n = sum(label_totals.values())
    if n < 2:
        return math.nan
    observed = sum(w for (first, second), w in coincidences.items() if first != second)
    expected = (n * n - sum(total * total for total in label_totals.values())) / (n - 1)
    if math.isclose(expected, 0.0, abs_tol=1e-12):
        return 1.0
    return 1.0 - observed / expected
