"""Percentile bootstrap confidence intervals for any per-item metric.

API:
- `bootstrap_mean(values, *, resamples=1000, level=0.95, seed=0) -> Estimate`: the mean of
  per-item values (accuracy from 0/1 hits, ROUGE-L F1, IoU, recall@k hits...).
- `bootstrap_statistic(n_items, statistic, *, resamples=1000, level=0.95, seed=0) -> Estimate`:
  any metric computed over a resample of items; `statistic(indices)` gets an integer array of
  item indices (repeats allowed) and returns a float (corpus BLEU, macro-F1, AP, median rank...).
- `Estimate.as_dict() -> {"value": x, "ci95": [low, high], "n": n}` (NaN written as None).

Method: the percentile bootstrap. Each resample draws `n` item indices uniformly with
replacement (`numpy.random.default_rng(seed).integers(0, n, size=(resamples, n))`); the interval
is the `(1 - level) / 2` and `(1 + level) / 2` percentiles (numpy's linear interpolation) of the
statistic over the resamples. `value` is the statistic on all items, never a bootstrap mean.
This is exactly `scipy.stats.bootstrap(..., method="percentile")` with the same generator; it
is written out so that metrics over item indices need no wrapping and the draws are reused for
every metric of a task (the same seed gives the same resamples). Resamples on which a metric is
undefined (NaN) are left out of the percentiles; with none left the interval is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DEFAULT_RESAMPLES", "Estimate", "bootstrap_mean", "bootstrap_statistic", "resample"]

DEFAULT_RESAMPLES = 1000


@dataclass(frozen=True)
class Estimate:
    """A metric value on all `n` items and its bootstrap interval at `level`."""

    value: float
    low: float
    high: float
    n: int
    level: float = 0.95

    def as_dict(self) -> dict[str, Any]:
        """JSON form: `{"value", "ci95": [low, high], "n"}` (the key names the level)."""
        return {
            "value": _json_number(self.value),
            f"ci{self.level * 100:g}": [_json_number(self.low), _json_number(self.high)],
            "n": self.n,
        }


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def resample(n_items: int, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """The `(resamples, n_items)` index draws every bootstrap here uses."""
    if resamples < 1:
        raise ValueError(f"need at least one resample, got {resamples}")
    return np.random.default_rng(seed).integers(0, n_items, size=(resamples, n_items))


def _interval(samples: np.ndarray, level: float) -> tuple[float, float]:
    finite = samples[~np.isnan(samples)]
    if finite.size == 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level}")


def bootstrap_mean(
    values: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """Mean of per-item `values` with its percentile bootstrap interval; NaN everywhere if empty."""
    _check_level(level)
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"values must be one number per item, got shape {array.shape}")
    if array.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, level)
    if np.isnan(array).any():
        raise ValueError("values hold NaN: score every item (a missing answer scores 0)")
    means = array[resample(array.size, resamples=resamples, seed=seed)].mean(axis=1)
    low, high = _interval(means, level)
    return Estimate(float(array.mean()), low, high, int(array.size), level)


def bootstrap_statistic(
    n_items: int,
    statistic: Callable[[np.ndarray], float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """`statistic(indices)` on all items and its percentile bootstrap interval over resamples."""
    _check_level(level)
    if n_items < 0:
        raise ValueError(f"n_items must not be negative, got {n_items}")
    if n_items == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, level)
    value = float(statistic(np.arange(n_items)))
    draws = resample(n_items, resamples=resamples, seed=seed)
    samples = np.array([float(statistic(indices)) for indices in draws])
    low, high = _interval(samples, level)
    return Estimate(value, low, high, n_items, level)
