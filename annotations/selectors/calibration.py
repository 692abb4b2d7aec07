"""Reads of a run's calibration, cliffs and skill-specific robustness (from its summary), the
twins behind a cliff, their CSV rows, and two runs side by side."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from annotations.charts import reliability_chart
from annotations.formats.cells import is_formula_like
from annotations.models import Family, Item, Prediction, Run
from annotations.scoring.calibration import METRICS
from annotations.scoring.cliffs import CliffRule, Triple, twin_triples

LEVELS = ("clean", "mild", "severe")
BREAKDOWNS = ("severity", "degradation_type", "modality", "source", "capability")
CAPABILITY_COLUMNS = ("capability", "Capability", "ability")


def item_capability(extra: dict[str, Any] | None, l2_category: str) -> str:
    """An item's capability: its `capability` column (kept in `Item.extra` on import and copied
    to its twins), else its `l2_category`."""
    for column in CAPABILITY_COLUMNS:
        value = (extra or {}).get(column)
        if value not in (None, ""):
            return str(value)
    return l2_category or ""


def item_level(*, severity: str, family: str) -> str:
    """clean / mild / severe; '' for an item of a benchmark without degradations."""
    if severity:
        return severity
    return "clean" if family == Family.MEDQDEG else ""


@dataclass
class MetricRow:
    label: str
    n: int
    values: dict[str, float | None]
    intervals: dict[str, list[float | None]]

    @property
    def cells(self) -> list[tuple[str, float | None, float | None, float | None]]:
        """(metric, value, low, high) in METRICS order, for templates."""
        found = []
        for metric in METRICS:
            low, high = (self.intervals.get(metric) or [None, None])[:2]
            found.append((metric, self.values.get(metric), low, high))
        return found


@dataclass
class ShiftRow:
    metric: str
    cells: list[tuple[float | None, float | None, float | None]]  # value, low, high


def _shift_rows(shift: dict[str, Any] | None) -> list[ShiftRow]:
    """Per metric: clean, mild, severe, then the steps clean→mild and mild→severe."""
    if not shift:
        return []
    blocks = [shift["levels"].get(level) or {} for level in LEVELS]
    blocks += [shift["steps"].get(step) or {} for step in ("clean>mild", "mild>severe")]
    rows = []
    for metric in METRICS:
        cells = []
        for block in blocks:
            low, high = ((block.get("intervals") or {}).get(metric) or [None, None])[:2]
            cells.append(((block.get("value") or {}).get(metric), low, high))
        rows.append(ShiftRow(metric, cells))
    return rows


@dataclass
class CalibrationView:
    overall: MetricRow
    tables: list[tuple[str, list[MetricRow]]]
    diagrams: list[tuple[str, dict[str, Any]]]  # per severity, the clean curve beside
    shift: dict[str, Any] | None
    shift_rows: list[ShiftRow]
    rated: int
    n: int
    bins: int
    level: float


def _row(label: str, group: dict[str, Any]) -> MetricRow:
    return MetricRow(
        label,
        group.get("n") or 0,
        {m: group.get(m) for m in METRICS},
        group.get("intervals") or {},
    )


def _ordered(name: str, values: dict[str, Any]) -> list[str]:
    if name == "severity":
        return [level for level in LEVELS if level in values]
    return sorted(values)


def run_calibration(run: Run) -> CalibrationView | None:
    """The run's calibration from its summary (no query); None when no answer has a confidence."""
    calibration = (run.summary or {}).get("calibration")
    if not calibration:
        return None
    by = calibration.get("by") or {}
    tables = [
        (name, [_row(value, by[name][value]) for value in _ordered(name, by[name])])
        for name in BREAKDOWNS
        if by.get(name)
    ]
    severity = by.get("severity") or {}
    clean = (severity.get("clean") or {}).get("bins") or []
    diagrams = []
    for level in _ordered("severity", severity):
        curves = [("clean", clean)] if level != "clean" and clean else []
        curves.append((level, severity[level].get("bins") or []))
        diagrams.append((level, reliability_chart(curves)))
    return CalibrationView(
        overall=_row("overall", calibration.get("overall") or {}),
        tables=tables,
        diagrams=diagrams,
        shift=calibration.get("shift"),
        shift_rows=_shift_rows(calibration.get("shift")),
        rated=calibration.get("rated") or 0,
        n=calibration.get("n") or 0,
        bins=calibration.get("bins") or 15,
        level=calibration.get("level") or 0.95,
    )


@dataclass
class CliffView:
    rule: dict[str, Any]
    rows: list[dict[str, Any]]
    capability: list[dict[str, Any]] = field(default_factory=list)
    # Per capability, the degradation (type, severity) it loses most under.
    worst: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(1 for row in self.rows if row["cliff"])


def run_cliffs(run: Run) -> CliffView | None:
    """The run's cliff table from its summary (no query), sorted by the severe step."""
    cliffs = (run.summary or {}).get("cliffs")
    if not cliffs:
        return None
    capability = cliffs.get("capability") or []
    worst: dict[str, dict[str, Any]] = {}
    for row in capability:
        best = worst.get(row["capability"])
        if best is None or row["drop"] > best["drop"]:
            worst[row["capability"]] = row
    return CliffView(cliffs.get("rule") or {}, cliffs.get("rows") or [], capability, worst)


def run_cliff_count(run: Run) -> int | None:
    cliffs = (run.summary or {}).get("cliffs")
    return None if cliffs is None else sum(1 for r in cliffs.get("rows") or [] if r["cliff"])


# --- the twins behind a cliff ---------------------------------------------------------------


@dataclass
class TwinAnswer:
    item: Item
    prediction: Prediction


@dataclass
class TripleView:
    clean: TwinAnswer
    mild: TwinAnswer
    severe: TwinAnswer


def cliff_triples(run: Run, *, degradation_type: str, modality: str = "") -> list[TripleView]:
    """The (clean, mild, severe) twins of one degradation type (and modality) with the run's
    answers to each, as the cliff table counted them. Two queries."""
    predictions = {
        p.item_id: p
        for p in Prediction.objects.filter(run=run, item__kind__in=("mcq", "label"))
        .select_related("item")
        .prefetch_related("item__item_images__image")
    }
    records = [
        {
            "item": p.item_id,
            "hit": p.hit is True,
            "clean_twin": p.item.clean_twin_id,
            "severity": item_level(
                severity=p.item.degradation_severity, family=run.benchmark.family
            ),
            "degradation_type": p.item.degradation_type,
            "modality": p.item.modality,
        }
        for p in predictions.values()
    ]

    def answer(record: dict[str, Any]) -> TwinAnswer:
        prediction = predictions[record["item"]]
        return TwinAnswer(prediction.item, prediction)

    found: list[Triple] = [
        t
        for t in twin_triples(records)
        if t.degradation_type == degradation_type and (not modality or t.modality == modality)
    ]
    return [
        TripleView(answer(dict(t.clean)), answer(dict(t.mild)), answer(dict(t.severe)))
        for t in found
    ]


# --- CSV ------------------------------------------------------------------------------------


def _cell(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula is quoted; numbers are kept."""
    if isinstance(value, str) and is_formula_like(value):
        return "'" + value
    return "" if value is None else value


CALIBRATION_CSV_HEADER = [
    "breakdown",
    "value",
    "n",
    *(column for metric in METRICS for column in (metric, f"{metric}_low", f"{metric}_high")),
]


def calibration_csv_rows(run: Run) -> list[list[Any]]:
    view = run_calibration(run)
    if view is None:
        return []
    rows = []
    for name, table in [("overall", [view.overall]), *view.tables]:
        for row in table:
            cells: list[Any] = [name, "" if name == "overall" else row.label, row.n]
            for metric in METRICS:
                low, high = (row.intervals.get(metric) or [None, None])[:2]
                cells += [row.values.get(metric), low, high]
            rows.append([_cell(c) for c in cells])
    return rows


CLIFF_CSV_HEADER = [
    "degradation_type",
    "modality",
    "n",
    "accuracy_clean",
    "accuracy_mild",
    "accuracy_severe",
    "drop_mild",
    "drop_severe",
    "p_mild",
    "p_severe",
    "cliff",
]


def cliffs_csv_rows(run: Run) -> list[list[Any]]:
    view = run_cliffs(run)
    if view is None:
        return []
    return [[_cell(row.get(column)) for column in CLIFF_CSV_HEADER] for row in view.rows]


def cliff_rule_line(run: Run) -> str:
    view = run_cliffs(run)
    rule = view.rule if view else {}
    # In the rule's own order: PostgreSQL's jsonb keeps a stored dict's keys in an order of its own.
    order = [f.name for f in fields(CliffRule)]
    keys = sorted(rule, key=lambda key: order.index(key) if key in order else len(order))
    return "; ".join(f"{key}={rule[key]}" for key in keys)


# --- two runs side by side ------------------------------------------------------------------


@dataclass
class Comparison:
    runs: tuple[Run, Run]
    calibrations: tuple[CalibrationView | None, CalibrationView | None]
    diagrams: list[tuple[str, dict[str, Any]]]  # per severity, run A and run B overlaid
    cliff_rows: list[dict[str, Any]]  # joined on (type, modality)


def compare_runs(a: Run, b: Run) -> Comparison:
    """Two runs of one benchmark: reliability diagrams overlaid per severity, cliff tables
    joined (sorted by the larger severe step). No query."""
    diagrams = []
    by_a = ((a.summary or {}).get("calibration") or {}).get("by", {}).get("severity") or {}
    by_b = ((b.summary or {}).get("calibration") or {}).get("by", {}).get("severity") or {}
    for level in LEVELS:
        if level in by_a or level in by_b:
            curves = [
                (key, by[level].get("bins") or [])
                for key, by in (("a", by_a), ("b", by_b))
                if level in by
            ]
            diagrams.append((level, reliability_chart(curves)))
    joined: dict[tuple[str, str], dict[str, Any]] = {}
    for key, run in (("a", a), ("b", b)):
        for row in ((run.summary or {}).get("cliffs") or {}).get("rows") or []:
            cell = (row["degradation_type"], row["modality"] or "")
            joined.setdefault(cell, {"degradation_type": cell[0], "modality": cell[1]})[key] = row

    def size(entry: dict[str, Any]) -> float:
        return max(entry[k]["drop_severe"] for k in ("a", "b") if k in entry)

    rows = sorted(joined.values(), key=lambda e: (-size(e), e["degradation_type"], e["modality"]))
    return Comparison((a, b), (run_calibration(a), run_calibration(b)), diagrams, rows)
