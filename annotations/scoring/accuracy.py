"""Accuracy: VLMEvalKit's own tables, exactly, and our breakdowns with confidence intervals.

`vlmeval_acc_table` and `medqdeg_score_table` give the numbers a paper quotes (what VLMEvalKit at
`VLMEVAL_COMMIT` prints); `breakdown` gives ours by any field (EndoBench scene, task, subtask,
dataset...), with Wilson intervals, for the pages.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from annotations.scoring.vlmeval import reads_as_nan


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


# VLMEvalKit's `report_acc` shows these MMBench categories abbreviated.
MMBENCH_ABBREVIATIONS = {
    "coarse_perception": "CP",
    "finegrained_perception (instance-level)": "FP-S",
    "finegrained_perception (cross-instance)": "FP-C",
    "logic_reasoning": "LR",
    "relation_reasoning": "RR",
    "attribute_reasoning": "AR",
}
MEDQDEG_GROUPS: tuple[tuple[str, str], ...] = (
    ("modality", "Modality"),
    ("degradation_type", "DegType"),
    ("degradation_severity", "Severity"),
    ("source", "Source"),
)


def _mean(hits: Sequence[bool]) -> float:
    # numpy's and pandas' mean of 0/1 values: an exact sum divided once, NaN for no values.
    return sum(hits) / len(hits) if hits else math.nan


def _column_present(
    column: str, header: Collection[str] | None, records: Sequence[Mapping[str, object]]
) -> bool:
    # VLMEvalKit lower-cases the prediction file's column names before it reports.
    if header is not None:
        return column in {name.lower() for name in header}
    return any(not reads_as_nan(record.get(column)) for record in records)


def vlmeval_acc_table(
    records: Iterable[Mapping[str, object]],
    *,
    header: Collection[str] | None = None,
    hit_key: str = "hit",
) -> list[dict[str, object]]:
    """VLMEvalKit's `report_acc` table, one dict per row: {"split": ..., "Overall": ...,
    l2-category values..., category values...}, the values exactly as VLMEvalKit computes them.

    Values are float64 means of the 0/1 hits (hits / n, no rounding; NaN for a cell without
    items); VLMEvalKit writes them in full to `*_acc.csv` and prints them with tabulate's
    default "g" (6 significant digits, `printed_as_vlmeval`). `header` is the release TSV's
    header (which of split, l2-category, category it has); None: the columns some record fills.
    As in VLMEvalKit: without a split column one row "none" holds every item; with one, a cell
    pandas reads as NaN puts its item in no row, and such splits make one row "nan" of NaNs;
    abilities are sorted, MMBench names abbreviated, and a name met twice (an l2-category equal
    to a category, or a category named "Overall") keeps its first position and the last values.
    Not as in VLMEvalKit: its rows come in arbitrary set order, ours sorted ("nan" last); where
    a category column mixes values and missing cells VLMEvalKit fails (sorting NaN with text),
    we leave those items out of that column.
    """
    rows = list(records)
    if _column_present("split", header, rows):
        split_of = [_vlmeval_value(record.get("split")) for record in rows]
        splits = sorted({s for s in split_of if s is not None}) + [None] * (None in split_of)
    else:
        split_of, splits = ["none"] * len(rows), ["none"]
    # One pass: (column, ability, split) -> tally; missing splits (None) fall in no row.
    tallies: dict[tuple[str, str | None, str], _Tally] = defaultdict(_Tally)
    abilities: dict[str, set[str | None]] = {}
    groups = [g for g in ("l2-category", "category") if _column_present(g, header, rows)]
    for record, split in zip(rows, split_of, strict=True):
        hit = is_hit(record.get(hit_key))
        if split is not None:
            tallies["Overall", None, split].add(hit)
        for group in groups:
            value = _vlmeval_value(record.get(group))
            abilities.setdefault(group, set()).add(value)
            if value is not None and split is not None:
                tallies[group, value, split].add(hit)
    columns: dict[str, tuple[str, str | None]] = {"Overall": ("Overall", None)}
    for group in groups:
        present = sorted(value for value in abilities.get(group, ()) if value is not None)
        if not present and None in abilities.get(group, ()):
            columns["nan"] = (group, None)  # only missing cells: VLMEvalKit's one NaN column
        for value in present:
            columns[MMBENCH_ABBREVIATIONS.get(value, value)] = (group, value)
    return [
        {"split": "nan" if split is None else split}
        | {name: _accuracy(tallies, key, split) for name, key in columns.items()}
        for split in splits
    ]


def _vlmeval_value(value: object) -> str | None:
    return None if reads_as_nan(value) else str(value)


def _accuracy(tallies: Mapping, key: tuple[str, str | None], split: str | None) -> float:
    # numpy's mean of 0/1 values: an exact sum divided once; NaN for a cell without items.
    tally = tallies.get((*key, split)) if split is not None else None
    return tally.hits / tally.n if tally else math.nan


def medqdeg_score_table(
    records: Iterable[Mapping[str, object]],
    *,
    header: Collection[str] | None = None,
    hit_key: str = "hit",
) -> dict[str, float | int]:
    """MedQ-DEG-Bench's own score dict (`MedQDEGBenchDataset.evaluate`), in its key order:
    Overall, Total, then Modality_<m>, DegType_<t>, Severity_<s>, Source_<s> for each sorted
    value of those columns present in `header` (None: the columns some record fills).

    Values are float64 means of the hits (hits / n, no rounding); items whose cell is missing
    (pandas NaN) count in Overall only. VLMEvalKit prints this dict as JSON, in full.
    """
    rows = list(records)
    hits = [is_hit(record.get(hit_key)) for record in rows]
    table: dict[str, float | int] = {"Overall": _mean(hits), "Total": len(rows)}
    for field, prefix in MEDQDEG_GROUPS:
        if not _column_present(field, header, rows):
            continue
        values = [_vlmeval_value(record.get(field)) for record in rows]
        for value in sorted({value for value in values if value is not None}):
            chosen = [hit for hit, own in zip(hits, values, strict=True) if own == value]
            table[f"{prefix}_{value}"] = _mean(chosen)
    return table


def printed_as_vlmeval(value: float) -> str:
    """A table value as VLMEvalKit's log prints it (tabulate's default: 6 significant digits)."""
    return format(value, "g")
