"""Chart geometry (annotations/charts.py): values land where they are, negative alpha included."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from annotations.charts import (
    AGREEMENT_BAR_W,
    AGREEMENT_LABEL_W,
    accuracy_chart,
    agreement_chart,
    count_charts,
    rating_chart,
    robustness_chart,
)


@dataclass
class Stats:
    n: int
    percent: float
    alpha: float
    warning: bool = False


def _tick(chart: dict, label: str) -> float:
    return next(t["x"] for t in chart["ticks"] if t["label"] == label)


def test_a_negative_alpha_is_drawn_below_zero():
    # Issue 21: an alpha of -0.154 was drawn at 0.
    chart = agreement_chart({"Gastroscopy": Stats(n=30, percent=0.4, alpha=-0.154)})
    row = chart["rows"][0]

    assert _tick(chart, "-0.25") == AGREEMENT_LABEL_W
    assert _tick(chart, "0") == chart["zero_x"]
    assert AGREEMENT_LABEL_W < row["alpha_x"] < chart["zero_x"]
    # -0.154 sits 0.096 of the 1.25 span right of -0.25
    assert row["alpha_x"] == pytest.approx(
        AGREEMENT_LABEL_W + 0.096 / 1.25 * AGREEMENT_BAR_W, abs=0.1
    )
    assert row["alpha"] == -0.154


def test_the_axis_is_zero_to_one_when_no_alpha_is_negative():
    chart = agreement_chart({"all": Stats(n=30, percent=1.0, alpha=0.5)})
    row = chart["rows"][0]

    assert chart["zero_x"] == AGREEMENT_LABEL_W
    assert [t["label"] for t in chart["ticks"]] == ["0", "0.25", "0.5", "0.75", "1"]
    assert row["alpha_x"] == AGREEMENT_LABEL_W + AGREEMENT_BAR_W / 2
    assert row["bar"] == AGREEMENT_BAR_W


def test_the_percent_bar_starts_at_zero_and_ends_at_one_on_a_widened_axis():
    chart = agreement_chart(
        {"a": Stats(n=30, percent=1.0, alpha=-0.6), "b": Stats(n=30, percent=0.5, alpha=0.2)}
    )
    full, half = chart["rows"]

    assert _tick(chart, "-0.75") == AGREEMENT_LABEL_W
    assert chart["zero_x"] + full["bar"] == pytest.approx(AGREEMENT_LABEL_W + AGREEMENT_BAR_W)
    assert half["bar"] == pytest.approx(full["bar"] / 2, abs=0.1)


def test_an_undefined_alpha_draws_no_tick():
    chart = agreement_chart({"few": Stats(n=1, percent=math.nan, alpha=math.nan, warning=True)})

    assert chart["rows"][0]["alpha_x"] is None
    assert chart["rows"][0]["bar"] == 0
    assert chart["zero_x"] == AGREEMENT_LABEL_W


def test_count_bars_are_largest_first_and_never_vanish():
    charts = count_charts(
        {"category": {"Polyp": 400, "": 1, "Ulcer": 200}, "split": {}},
        {"category": "By category", "split": "By split"},
    )

    assert [c["title"] for c in charts] == ["By category"]
    bars = charts[0]["bars"]
    assert [b["label"] for b in bars] == ["Polyp", "Ulcer", "—"]
    assert [b["width"] for b in bars] == [260, 130, 2]


def test_accuracy_bars_and_whiskers_share_one_axis():
    chart = accuracy_chart([("model", {"accuracy": 0.5, "low": 0.25, "high": 0.75})])
    bar = chart["bars"][0]

    assert chart["x0"] + bar["width"] == _tick(chart, "50%")
    assert bar["low"] == _tick(chart, "25%")
    assert bar["high"] == _tick(chart, "75%")


def test_ratings_fit_inside_the_padded_axis():
    chart = rating_chart(
        [
            {"model": "a", "rating": 1000.0, "low": 950.0, "high": 1050.0},
            {"model": "b", "rating": 900.0, "low": 850.0, "high": 960.0},
        ]
    )
    first, second = chart["rows"]

    assert chart["x0"] < second["low"] < second["x"] < first["x"] < first["high"]
    assert first["high"] < chart["value_x"]
    assert rating_chart([]) == {}


@dataclass
class Score:
    n: int
    accuracy: float
    low: float
    high: float


@dataclass
class Row:
    label: str
    scores: dict
    drop: float | None


def test_robustness_rows_draw_the_levels_present_and_the_drop():
    rows = [
        Row("CT", {"clean": Score(10, 0.9, 0.6, 0.98), "severe": Score(10, 0.5, 0.2, 0.8)}, -0.4)
    ]

    chart = robustness_chart(rows, levels=("clean", "mild", "severe"), drop_text=lambda d: f"{d:+}")

    (row,) = chart.rows
    assert [bar.level for bar in row.bars] == ["clean", "severe"]
    assert row.bars[1].width == pytest.approx(row.bars[0].width * 5 / 9, abs=0.1)
    assert row.drop == "-0.4" and row.drop_bad


def test_reliability_chart_places_bins_on_a_square_over_the_diagonal():
    from annotations.charts import (
        RELIABILITY_LEFT,
        RELIABILITY_SIZE,
        RELIABILITY_TOP,
        reliability_chart,
    )

    bins = [
        {"mean_confidence": 0.0, "accuracy": 0.0, "n": 1},
        {"mean_confidence": 0.5, "accuracy": 1.0, "n": 3},
    ]
    chart = reliability_chart([("clean", bins), ("severe", [])])
    left, top, size = RELIABILITY_LEFT, RELIABILITY_TOP, RELIABILITY_SIZE
    assert (chart["left"], chart["right"]) == (left, left + size)
    assert (chart["top"], chart["bottom"]) == (top, top + size)
    clean, severe = chart["curves"]
    # x grows with confidence, y falls with accuracy (SVG's y points down).
    assert [(d["x"], d["y"]) for d in clean["dots"]] == [
        (left, top + size),
        (left + size / 2, top),
    ]
    assert clean["points"] == " ".join(f"{d['x']},{d['y']}" for d in clean["dots"])
    # A dot's area follows its bin's share: 3 of 4 answers draw a larger dot than 1 of 4.
    assert clean["dots"][1]["r"] > clean["dots"][0]["r"]
    assert severe == {"key": "severe", "dots": [], "points": ""}
