"""The Bradley–Terry fit on scipy gives the numbers of the Newton fit it replaced (issue 22).

`_newton_fit` is that earlier implementation, kept here as the reference: Newton's method on the
log-strengths with an Armijo line search, stopping when a step is below 1e-7.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from annotations.scoring import ratings
from annotations.scoring.ratings import PRIOR_TIES, bootstrap_intervals, bradley_terry


def _log_posterior(theta, wins, games):
    pairs = 0.5 * float((games * np.logaddexp(theta[:, None], theta[None, :])).sum())
    prior = PRIOR_TIES * float((0.5 * theta - np.logaddexp(theta, 0.0)).sum())
    return float(wins @ theta) - pairs + prior


def _newton_fit(wins, games):
    theta = np.zeros_like(wins)
    for _ in range(100):
        p_win = expit(theta[:, None] - theta[None, :])
        p_prior = expit(theta)
        gradient = wins - (games * p_win).sum(axis=1) + PRIOR_TIES * (0.5 - p_prior)
        curvature = games * p_win * (1.0 - p_win)
        information = np.diag(curvature.sum(axis=1) + PRIOR_TIES * p_prior * (1.0 - p_prior))
        step = np.linalg.solve(information - curvature, gradient)
        if np.max(np.abs(step)) < 1e-7:
            return theta + step
        current, scale = _log_posterior(theta, wins, games), 1.0
        while scale > 1e-8:
            candidate = theta + scale * step
            if _log_posterior(candidate, wins, games) >= current + 1e-4 * scale * (gradient @ step):
                break
            scale /= 2
        else:
            return theta
        theta = candidate
    return theta


def _newton_ratings(comparisons):
    players = ratings._players(comparisons)
    first, second, outcome = ratings._as_arrays(comparisons, players)
    wins, games = ratings._tables(first, second, outcome, len(players))
    return dict(zip(players, ratings._elo(_newton_fit(wins, games)).tolist(), strict=True))


def _league(rng, models: int, grades: int):
    names = [f"model-{i}" for i in range(models)]
    strength = rng.normal(0.0, 1.5, models)
    comparisons = []
    for _ in range(grades):
        a, b = rng.choice(models, 2, replace=False)
        if rng.random() < 0.1:
            outcome = 0.5
        else:
            outcome = float(rng.random() < expit(strength[a] - strength[b]))
        comparisons.append((names[a], names[b], outcome))
    return comparisons


@pytest.mark.parametrize("seed", range(40))
def test_the_fit_matches_the_newton_fit_on_random_leagues(seed):
    rng = np.random.default_rng(seed)
    comparisons = _league(rng, models=int(rng.integers(2, 9)), grades=int(rng.integers(1, 120)))

    assert bradley_terry(comparisons) == pytest.approx(_newton_ratings(comparisons), abs=1e-4)


@pytest.mark.parametrize(
    "comparisons",
    [
        [("a", "b", 1.0)] * 1000 + [("b", "c", 1.0)] * 1000,  # far apart: the prior holds them
        [("a", "b", 1.0)] * 5000 + [("c", "d", 0.5)] * 3,  # two leagues that never met
        [("a", "b", 0.5)],
    ],
    ids=["chain", "disconnected", "one-tie"],
)
def test_the_fit_matches_the_newton_fit_at_the_edges(comparisons):
    fitted = bradley_terry(comparisons)

    assert fitted == pytest.approx(_newton_ratings(comparisons), abs=1e-4)
    assert all(math.isfinite(value) for value in fitted.values())


def _newton_bootstrap(comparisons, n_boot: int, seed: int) -> dict:
    players = ratings._players(comparisons)
    first, second, outcome = ratings._as_arrays(comparisons, players)
    rng = np.random.default_rng(seed)
    samples = np.empty((n_boot, len(players)))
    for row in range(n_boot):
        picked = rng.integers(0, len(comparisons), size=len(comparisons))
        tables = ratings._tables(first[picked], second[picked], outcome[picked], len(players))
        samples[row] = ratings._elo(_newton_fit(*tables))
    low, high = np.percentile(samples, 2.5, axis=0), np.percentile(samples, 97.5, axis=0)
    return {name: (float(low[i]), float(high[i])) for i, name in enumerate(players)}


def test_the_bootstrap_matches_one_built_on_the_newton_fit():
    comparisons = _league(np.random.default_rng(7), models=4, grades=60)

    intervals = bootstrap_intervals(comparisons, n_boot=200, seed=3)

    reference = _newton_bootstrap(comparisons, n_boot=200, seed=3)
    assert intervals.keys() == reference.keys()
    for name, (low, high) in reference.items():
        assert intervals[name] == pytest.approx((low, high), abs=1e-3)
