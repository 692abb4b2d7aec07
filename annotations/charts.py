"""Geometry of the inline SVG charts: agreement, release counts, leaderboard accuracy, ratings and
robustness. Plain Python: numbers and labels in, coordinates out; the templates draw them.

Every chart maps a value domain onto pixels with `_Axis`, so a value outside [0, 1] (a negative
Krippendorff's alpha) is drawn where it is instead of being clipped to the edge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class _Axis:
    """A linear map from [low, high] to [x0, x0 + width] pixels."""

    low: float
    high: float
    x0: float
    width: float

    def x(self, value: float) -> float:
        return round(self.x0 + (value - self.low) / (self.high - self.low) * self.width, 1)

    def length(self, value: float) -> float:
        return round(value / (self.high - self.low) * self.width, 1)


# --- agreement ------------------------------------------------------------------------------

AGREEMENT_ROW, AGREEMENT_LABEL_W, AGREEMENT_BAR_W = 30, 190, 380


class AgreementNumbers(Protocol):
    n: int
    percent: float
    alpha: float
    warning: bool


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def agreement_chart(groups: Mapping[str, AgreementNumbers]) -> dict[str, Any]:
    """Percent agreement as a bar and Krippendorff's alpha as a tick on one axis. Alpha runs from
    -1 to 1: when one is negative the axis starts at the next quarter below it, and zero moves
    right, so the tick is drawn below zero."""
    alphas = [a for stats in groups.values() if (a := _finite(stats.alpha)) is not None]
    low = min(0.0, math.floor(min(alphas, default=0.0) * 4) / 4)
    axis = _Axis(low, 1.0, AGREEMENT_LABEL_W, AGREEMENT_BAR_W)
    zero = axis.x(0.0)
    rows = []
    for position, (label, stats) in enumerate(groups.items()):
        percent, alpha = _finite(stats.percent), _finite(stats.alpha)
        rows.append(
            {
                "label": label,
                "y": 24 + position * AGREEMENT_ROW,
                "bar": axis.length(percent or 0.0),
                "alpha": alpha,
                "alpha_x": None if alpha is None else axis.x(alpha),
                "percent": percent,
                "n": stats.n,
                "warning": stats.warning,
            }
        )
    steps = round((1.0 - low) * 4)
    return {
        "rows": rows,
        "height": 24 + len(rows) * AGREEMENT_ROW + 8,
        "width": AGREEMENT_LABEL_W + AGREEMENT_BAR_W + 120,
        "label_w": AGREEMENT_LABEL_W,
        "bar_w": AGREEMENT_BAR_W,
        "zero_x": zero,
        "ticks": [
            {"x": axis.x(low + i / 4), "label": f"{low + i / 4:.2g}"} for i in range(steps + 1)
        ],
    }


# --- counts (release page) ------------------------------------------------------------------

COUNT_ROW, COUNT_BAR = 24, 260


def count_charts(counts: Mapping[str, Mapping[str, int]], titles: Mapping[str, str]) -> list[dict]:
    """One bar chart per titled key of `counts` (label -> count), largest first; empty ones left
    out. The longest bar is COUNT_BAR px, and every bar at least 2 px so a 1 still shows."""
    charts = []
    for key, title in titles.items():
        values = counts.get(key) or {}
        if not values:
            continue
        top = max(values.values()) or 1
        ordered = sorted(values.items(), key=lambda pair: (-pair[1], pair[0]))
        bars = [
            {
                "label": label or "—",
                "count": n,
                "y": i * COUNT_ROW,
                "width": max(2, round(COUNT_BAR * n / top)),
            }
            for i, (label, n) in enumerate(ordered)
        ]
        charts.append({"title": title, "bars": bars, "height": len(bars) * COUNT_ROW})
    return charts


# --- leaderboard and ratings ----------------------------------------------------------------

PLOT_LABEL_W, PLOT_W, PLOT_ROW, PLOT_TOP = 220, 460, 30, 26


def accuracy_chart(entries: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """A horizontal bar per (label, score) with its 95% whiskers; score has accuracy, low, high."""
    axis = _Axis(0.0, 1.0, PLOT_LABEL_W, PLOT_W)
    bars = []
    for position, (label, score) in enumerate(entries):
        accuracy = score.get("accuracy")
        y = PLOT_TOP + position * PLOT_ROW
        bars.append(
            {
                "label": label,
                "y": y,
                "text_y": y + 15,
                "width": axis.length(accuracy or 0.0),
                "low": axis.x(score.get("low") or 0.0),
                "high": axis.x(score.get("high") or 0.0),
                "mid": y + 10,
                "accuracy": accuracy,
                "value_x": round(PLOT_LABEL_W + PLOT_W + 8, 1),
            }
        )
    ticks = [{"x": axis.x(t / 4), "label": f"{t * 25}%"} for t in range(5)]
    height = PLOT_TOP + PLOT_ROW * max(1, len(entries)) + 4
    return {
        "bars": bars,
        "ticks": ticks,
        "height": height,
        "width": PLOT_LABEL_W + PLOT_W + 70,
        "x0": PLOT_LABEL_W,
        "axis_bottom": height - 4,
    }


def rating_chart(ratings: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A dot with whiskers per model rating (model, rating, low, high), on an axis padded 5%."""
    if not ratings:
        return {}
    low = min(min(r["low"], r["rating"]) for r in ratings)
    high = max(max(r["high"], r["rating"]) for r in ratings)
    span = max(high - low, 1.0)
    axis = _Axis(low - span * 0.05, high + span * 0.05, PLOT_LABEL_W, PLOT_W)
    rows = [
        {
            "label": r["model"],
            "mid": PLOT_TOP + i * PLOT_ROW + 10,
            "text_y": PLOT_TOP + i * PLOT_ROW + 15,
            "x": axis.x(r["rating"]),
            "low": axis.x(r["low"]),
            "high": axis.x(r["high"]),
            "rating": r["rating"],
        }
        for i, r in enumerate(ratings)
    ]
    height = PLOT_TOP + PLOT_ROW * len(ratings) + 4
    values = [axis.low + (axis.high - axis.low) * t / 4 for t in range(5)]
    return {
        "rows": rows,
        "ticks": [{"x": axis.x(value), "label": f"{value:.0f}"} for value in values],
        "height": height,
        "width": PLOT_LABEL_W + PLOT_W + 70,
        "x0": PLOT_LABEL_W,
        "value_x": PLOT_LABEL_W + PLOT_W + 8,
        "axis_bottom": height - 4,
    }


# --- robustness (clean / mild / severe) -----------------------------------------------------

CHART_LABEL_W, CHART_PLOT_W, CHART_DROP_W = 140, 380, 100
BAR_H, BAR_GAP, ROW_GAP, CHART_TOP = 10, 2, 12, 22


class ScoreNumbers(Protocol):
    n: int
    accuracy: float
    low: float
    high: float


class LevelRow(Protocol):
    @property
    def label(self) -> str: ...
    @property
    def scores(self) -> Mapping[str, Any]: ...  # level -> ScoreNumbers
    @property
    def drop(self) -> float | None: ...


@dataclass
class ChartBar:
    level: str
    y: int
    mid_y: int
    text_y: int
    width: float
    low: float
    high: float
    text_x: float
    percent: str
    n: int


@dataclass
class ChartRow:
    label: str
    y: int  # baseline of the label
    bars: list[ChartBar]
    drop: str  # "-12.5 pp" or ""
    drop_bad: bool


@dataclass
class Chart:
    width: int
    height: int
    plot_x: int
    drop_x: int
    ticks: list[tuple[float, str]]
    rows: list[ChartRow]


def _level_bar(level: str, score: ScoreNumbers, y: int) -> ChartBar:
    axis = _Axis(0.0, 100.0, CHART_LABEL_W, CHART_PLOT_W)
    accuracy = 100.0 * score.accuracy
    return ChartBar(
        level=level,
        y=y,
        mid_y=y + BAR_H // 2,
        text_y=y + BAR_H - 1,
        width=axis.length(accuracy),
        low=axis.x(100.0 * score.low),
        high=axis.x(100.0 * score.high),
        text_x=round(axis.x(accuracy) + 4, 1),
        percent=f"{accuracy:.0f}%",
        n=score.n,
    )


def robustness_chart(
    rows: Iterable[LevelRow], *, levels: Sequence[str], drop_text: Callable[[float | None], str]
) -> Chart:
    """Horizontal bars per row, one per level present, with Wilson whiskers and the drop."""
    row_h = len(levels) * (BAR_H + BAR_GAP) + ROW_GAP
    chart_rows = []
    for position, row in enumerate(rows):
        top = CHART_TOP + position * row_h
        bars = [
            _level_bar(level, row.scores[level], top + slot * (BAR_H + BAR_GAP))
            for slot, level in enumerate(levels)
            if level in row.scores
        ]
        chart_rows.append(
            ChartRow(
                label=row.label,
                y=top + (len(levels) * (BAR_H + BAR_GAP)) // 2 + 4,
                bars=bars,
                drop=drop_text(row.drop),
                drop_bad=row.drop is not None and row.drop < 0,
            )
        )
    ticks = [(CHART_LABEL_W + CHART_PLOT_W * t / 100.0, f"{t}%") for t in (0, 25, 50, 75, 100)]
    return Chart(
        width=CHART_LABEL_W + CHART_PLOT_W + CHART_DROP_W + 10,
        height=CHART_TOP + max(len(chart_rows), 1) * row_h,
        plot_x=CHART_LABEL_W,
        drop_x=CHART_LABEL_W + CHART_PLOT_W + CHART_DROP_W,
        ticks=ticks,
        rows=chart_rows,
    )


# --- reliability diagrams (calibration) -----------------------------------------------------

RELIABILITY_SIZE, RELIABILITY_LEFT, RELIABILITY_TOP = 150, 34, 10


def reliability_chart(curves: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]) -> dict[str, Any]:
    """One reliability diagram: accuracy (y) against mean confidence (x) per non-empty bin, for
    each `(key, bins)` curve (bins: `mean_confidence`, `accuracy`, `n`), drawn over the diagonal
    of perfect calibration. A dot's area grows with its bin's share of the curve's answers."""
    size, left, top = RELIABILITY_SIZE, RELIABILITY_LEFT, RELIABILITY_TOP
    axis = _Axis(0.0, 1.0, left, size)

    def y(value: float) -> float:
        return round(top + size - value * size, 1)

    drawn = []
    for key, bins in curves:
        total = sum(int(b["n"]) for b in bins) or 1
        dots = [
            {
                "x": axis.x(float(b["mean_confidence"])),
                "y": y(float(b["accuracy"])),
                "r": round(2.0 + 5.0 * math.sqrt(int(b["n"]) / total), 1),
                "n": int(b["n"]),
                "accuracy": float(b["accuracy"]),
                "confidence": float(b["mean_confidence"]),
            }
            for b in bins
        ]
        drawn.append(
            {"key": key, "dots": dots, "points": " ".join(f"{d['x']},{d['y']}" for d in dots)}
        )
    ticks = [
        {"value": t / 4, "x": axis.x(t / 4), "y": y(t / 4), "label": f"{t / 4:g}"} for t in range(5)
    ]
    return {
        "width": left + size + 10,
        "height": top + size + 30,
        "left": left,
        "top": top,
        "right": left + size,
        "bottom": top + size,
        "ticks": ticks,
        "curves": drawn,
    }
