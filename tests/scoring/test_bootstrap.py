"""Percentile bootstrap intervals: scipy's own method with the same draws, and small cases by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import scipy.stats

from annotations.scoring.bootstrap import (
    Estimate,
    bootstrap_mean,
    bootstrap_statistic,
    resample,
)

VALUES = np.random.default_rng(5).random(37)


def test_it_is_scipys_percentile_bootstrap_with_the_same_generator() -> None:
    expected = scipy.stats.bootstrap(
        (VALUES,),
        np.mean,
        n_resamples=1000,
        method="percentile",
        confidence_level=0.95,
        rng=np.random.default_rng(7),
    ).confidence_interval

    estimate = bootstrap_mean(VALUES, resamples=1000, seed=7)

    assert (estimate.low, estimate.high) == pytest.approx((expected.low, expected.high), abs=1e-12)
    assert estimate.value == pytest.approx(VALUES.mean())
    assert estimate.n == 37


def test_a_metric_over_item_indices_sees_the_same_draws_as_the_mean() -> None:
    by_mean = bootstrap_mean(VALUES, resamples=200, seed=3)
    by_statistic = bootstrap_statistic(
        len(VALUES), lambda indices: VALUES[indices].mean(), resamples=200, seed=3
    )

    assert by_statistic == by_mean


def test_it_computes_two_tiny_cases_by_hand() -> None:
    # constant values: every resample has the same mean
    constant = bootstrap_mean([0.25, 0.25, 0.25])
    assert (constant.value, constant.low, constant.high, constant.n) == (0.25, 0.25, 0.25, 3)
    # two values 0 and 1: resample means are 0, 1/2, 1 with chances 1/4, 1/2, 1/4, so with 1000
    # draws the 2.5th percentile is 0 and the 97.5th is 1
    assert bootstrap_mean([0.0, 1.0]) == Estimate(0.5, 0.0, 1.0, 2)


def test_it_is_reproducible_by_seed() -> None:
    assert bootstrap_mean(VALUES, seed=11) == bootstrap_mean(VALUES, seed=11)
    assert bootstrap_mean(VALUES, seed=11) != bootstrap_mean(VALUES, seed=12)
    assert resample(5, resamples=3, seed=1).shape == (3, 5)


def test_the_value_is_the_statistic_on_all_items_not_a_bootstrap_mean() -> None:
    estimate = bootstrap_statistic(4, lambda indices: float(np.median(indices)), resamples=50)

    assert estimate.value == 1.5


def test_resamples_where_the_metric_is_undefined_are_left_out() -> None:
    # the statistic is NaN whenever item 0 is missing from the draw
    def statistic(indices: np.ndarray) -> float:
        return 1.0 if 0 in indices else math.nan

    assert bootstrap_statistic(3, statistic, resamples=100) == Estimate(1.0, 1.0, 1.0, 3)
    never = bootstrap_statistic(3, lambda indices: math.nan, resamples=10)
    assert math.isnan(never.low) and math.isnan(never.high)


def test_no_items_give_an_undefined_estimate_that_serialises_as_null() -> None:
    estimate = bootstrap_mean([])

    assert estimate.n == 0
    assert estimate.as_dict() == {"value": None, "ci95": [None, None], "n": 0}
    assert bootstrap_statistic(0, lambda indices: 1.0).as_dict()["value"] is None
    json.dumps(estimate.as_dict(), allow_nan=False)


def test_the_json_key_names_the_level() -> None:
    estimate = bootstrap_mean([1.0, 0.0, 1.0], level=0.9)

    assert estimate.as_dict() == {
        "value": pytest.approx(2 / 3),
        "ci90": [estimate.low, estimate.high],
        "n": 3,
    }


def test_it_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="level"):
        bootstrap_mean([1.0], level=95)
    with pytest.raises(ValueError, match="resample"):
        bootstrap_mean([1.0], resamples=0)
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_mean([1.0, math.nan])
    with pytest.raises(ValueError, match="one number per item"):
        bootstrap_mean([[1.0, 0.0]])
    with pytest.raises(ValueError, match="negative"):
        bootstrap_statistic(-1, lambda indices: 0.0)
