"""Accuracy with confidence intervals, broken down by any item fields, in one pass over records."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# VLMEvalKit's `report_acc` columns, in its order; an item without a split belongs to "none".
VLMEVAL_GROUPS: tuple[str, ...] = ("l2-category", "category")
VLMEVAL_NO_SPLIT = "none"
OVERALL = "Overall"


@dataclass(frozen=True)
class Score:
    """Hits out of n, the accuracy (NaN when n is 0) and its Wilson 95% interval."""

    n: int
    hits: int
    accuracy: float
    low: float
    high: float

    @classmethod
    def from_counts(cls, hits: int, n: int, z: float = 1.96) -> Score:
        """The Score of `hits` correct answers out of `n`."""
        low, high = wilson_interval(hits, n, z)
        accuracy = hits / n if n else math.nan
        return cls(n=n, hits=hits, accuracy=accuracy, low=low, high=high)


def wilson_interval(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a proportion; (0.0, 1.0) when n is 0 (nothing is known).

    Wilson rather than the normal approximation because per-category counts are often small and
    accuracies near 0 or 1, where the normal interval leaves [0, 1] or collapses to a point.
    """
    if n < 0 or hits < 0 or hits > n:
        raise ValueError(f"need 0 <= hits <= n, got hits={hits}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - half_width), min(1.0, centre + half_width)


def is_hit(value: object) -> bool:
    """Whether a record's hit cell counts as correct; None and NaN (a missing score) do not."""
    if value is None:
        return False
    if isinstance(value, float) and math.isnan(value):
        return False
    return bool(value)


def is_missing(value: object) -> bool:
    """Whether a field value is absent: None, NaN (pandas' empty cell) or a blank string."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


class _Tally:
    def __init__(self) -> None:
        self.n = 0
        self.hits = 0

    def add(self, hit: bool) -> None:
        self.n += 1
        self.hits += hit

    def score(self) -> Score:
        return Score.from_counts(self.hits, self.n)


def breakdown(
    records: Iterable[Mapping[str, object]],
    fields: Sequence[str],
    hit_key: str = "hit",
) -> dict[str, object]:
    """Accuracy overall and for each value of each field, reading `records` once.

    Returns `{"overall": Score, "by": {field: {value: Score}}}`, values sorted. A record whose
    field is missing (absent key, None, NaN, blank) is counted overall but skipped for that field:
    an "unknown" bucket would mix unrelated items and read as a real category.
    """
    overall = _Tally()
    by_field: dict[str, dict[Hashable, _Tally]] = {field: defaultdict(_Tally) for field in fields}
    for record in records:
        hit = is_hit(record.get(hit_key))
        overall.add(hit)
        for field in fields:
            value = record.get(field)
            if not is_missing(value):
                by_field[field][value].add(hit)
    return {
        "overall": overall.score(),
        "by": {field: _sorted_scores(tallies) for field, tallies in by_field.items()},
    }


def _sorted_scores(tallies: Mapping[Hashable, _Tally]) -> dict[Hashable, Score]:
    return {value: tallies[value].score() for value in sorted(tallies, key=str)}


def vlmeval_report(
    records: Iterable[Mapping[str, object]], hit_key: str = "hit"
) -> dict[str, dict[str, Score]]:
    """VLMEvalKit's `report_acc` table: one row per split, columns Overall, l2-categories, categories.

    Returns `{split: {column: Score}}`, splits sorted, columns in VLMEvalKit's order (Overall,
    then sorted `l2-category` values, then sorted `category` values). Records without a split go
    to the split "none", as VLMEvalKit does. Every row has every column; a cell with no items has
    n=0 and NaN accuracy (VLMEvalKit shows NaN there too). As in VLMEvalKit, a category value equal
    to an l2-category value shares one column, placed as the l2-category's and
    holding the category's accuracy. Missing category values are
    skipped (see `breakdown`); VLMEvalKit's MMBench abbreviations are not applied.
    """
    cells: dict[tuple[str, str | None, str], _Tally] = defaultdict(_Tally)
    values_by_group: dict[str, set[str]] = {group: set() for group in VLMEVAL_GROUPS}
    splits: set[str] = set()
    for record in records:
        split_value = record.get("split")
        split = VLMEVAL_NO_SPLIT if is_missing(split_value) else str(split_value)
        splits.add(split)
        hit = is_hit(record.get(hit_key))
        cells[split, None, OVERALL].add(hit)
        for group in VLMEVAL_GROUPS:
            value = record.get(group)
            if not is_missing(value):
                values_by_group[group].add(str(value))
                cells[split, group, str(value)].add(hit)
    # Column -> group it is read from. A later group overwrites an equal name but, as in
    # VLMEvalKit's dict of columns, the column keeps its first position.
    column_group: dict[str, str | None] = {OVERALL: None}
    for group in VLMEVAL_GROUPS:
        column_group.update(dict.fromkeys(sorted(values_by_group[group]), group))
    return {
        split: {
            column: cells.get((split, group, column), _Tally()).score()
            for column, group in column_group.items()
        }
        for split in sorted(splits)
    }
