"""Bradley–Terry ratings from clinicians' pairwise grades of model answers, with bootstrap intervals.

A comparison is `(first, second, outcome)` with outcome 1 when `first` wins, 0 when `second` wins
and 0.5 for a tie. Ratings sit on an Elo-like scale: 1000 + 400·log10(strength), shifted so that
their mean is 1000, so a 400-point gap means 10:1 odds of winning.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from scipy.optimize import root
from scipy.special import expit

Comparison = tuple[str, str, float]

ELO_BASE = 1000.0
ELO_SCALE = 400.0
# The prior: each model also plays this many virtual tied games against a fixed reference of
# strength 1. Without it a model that never lost would have infinite strength (the MLE does not
# exist); one tie barely moves ratings once a model has a few dozen real grades.
PRIOR_TIES = 1.0
# Relative change of the log-strengths at which the fit stops; 1e-9 is far below 0.001 points.
_TOLERANCE = 1e-9


def bradley_terry(comparisons: Sequence[Comparison]) -> dict[str, float]:
    """Elo-scale Bradley–Terry rating of every model that appears in `comparisons`.

    The maximum a posteriori fit (see PRIOR_TIES) of the log-strengths, which the prior makes
    strictly concave, so it converges in a few steps even for a model that never lost.
    A tie counts as half a win for each side. Empty input gives an empty dict. Raises ValueError
    on an outcome outside [0, 1] or a model compared with itself.
    """
    players = _players(comparisons)
    if not players:
        return {}
    first, second, outcome = _as_arrays(comparisons, players)
    wins, games = _tables(first, second, outcome, len(players))
    return dict(zip(players, _elo(_fit_log_strengths(wins, games)).tolist(), strict=True))


def _players(comparisons: Sequence[Comparison]) -> list[str]:
    names: set[str] = set()
    for first, second, outcome in comparisons:
        if first == second:
            raise ValueError(f"a model cannot be compared with itself: {first!r}")
        if not 0.0 <= outcome <= 1.0:
            raise ValueError(f"outcome must be in [0, 1], got {outcome!r}")
        names.update((first, second))
    return sorted(names)


def _as_arrays(
    comparisons: Sequence[Comparison], players: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    index = {name: i for i, name in enumerate(players)}
    first = np.array([index[a] for a, _, _ in comparisons], dtype=np.intp)
    second = np.array([index[b] for _, b, _ in comparisons], dtype=np.intp)
    outcome = np.array([float(result) for _, _, result in comparisons])
    return first, second, outcome


def _tables(
    first: np.ndarray, second: np.ndarray, outcome: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each player's total score, and the symmetric matrix of games played between each pair."""
    wins = np.bincount(first, outcome, size) + np.bincount(second, 1.0 - outcome, size)
    games = np.zeros((size, size))
    np.add.at(games, (first, second), 1.0)
    return wins, games + games.T


def _gradient(theta: np.ndarray, wins: np.ndarray, games: np.ndarray) -> np.ndarray:
    p_win = expit(theta[:, None] - theta[None, :])
    return wins - (games * p_win).sum(axis=1) + PRIOR_TIES * (0.5 - expit(theta))


def _information(theta: np.ndarray, wins: np.ndarray, games: np.ndarray) -> np.ndarray:
    """The negative Hessian: positive definite thanks to the prior's diagonal term."""
    p_win = expit(theta[:, None] - theta[None, :])
    p_prior = expit(theta)
    curvature = games * p_win * (1.0 - p_win)
    return np.diag(curvature.sum(axis=1) + PRIOR_TIES * p_prior * (1.0 - p_prior)) - curvature


def _fit_log_strengths(
    wins: np.ndarray, games: np.ndarray, start: np.ndarray | None = None
) -> np.ndarray:
    # The log-posterior is strictly concave (see PRIOR_TIES), so its maximum is the one root of
    # the gradient: MINPACK's hybrid Newton method with the exact Jacobian finds it in a few steps.
    result = root(
        lambda theta: _gradient(theta, wins, games),
        np.zeros_like(wins) if start is None else start,
        jac=lambda theta: -_information(theta, wins, games),
        method="hybr",
        options={"xtol": _TOLERANCE},
    )
    if not result.success:
        raise RuntimeError(f"the Bradley–Terry fit did not converge: {result.message}")
    return result.x


def _elo(theta: np.ndarray) -> np.ndarray:
    return ELO_BASE + ELO_SCALE / math.log(10.0) * (theta - theta.mean())


def bootstrap_intervals(
    comparisons: Sequence[Comparison],
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap interval of each model's rating, resampling whole comparisons.

    The same `seed` always gives the same intervals. Every model that appears in `comparisons`
    gets an interval, even from resamples that happen to leave it out (the prior then holds it
    near the mean).
    """
    players = _players(comparisons)
    if not players or n_boot < 1:
        return {}
    first, second, outcome = _as_arrays(comparisons, players)
    # Every resample starts from the full data's fit, a few Newton steps from its own.
    start = _fit_log_strengths(*_tables(first, second, outcome, len(players)))
    rng = np.random.default_rng(seed)
    samples = np.empty((n_boot, len(players)))
    for row in range(n_boot):
        picked = rng.integers(0, len(comparisons), size=len(comparisons))
        wins, games = _tables(first[picked], second[picked], outcome[picked], len(players))
        samples[row] = _elo(_fit_log_strengths(wins, games, start))
    tail = (1.0 - level) / 2 * 100
    low = np.percentile(samples, tail, axis=0)
    high = np.percentile(samples, 100 - tail, axis=0)
    return {name: (float(low[i]), float(high[i])) for i, name in enumerate(players)}


def win_rate_matrix(comparisons: Sequence[Comparison]) -> dict[str, dict[str, float]]:
    """Share of points each model took against each opponent it met (a tie is half a point).

    `matrix[a][b]` is a's score against b divided by their games; pairs that never met are absent.
    """
    _players(comparisons)
    points: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    games: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for first, second, outcome in comparisons:
        points[first][second] += outcome
        points[second][first] += 1.0 - outcome
        games[first][second] += 1
        games[second][first] += 1
    return {
        player: {
            opponent: points[player][opponent] / count
            for opponent, count in sorted(opponents.items())
        }
        for player, opponents in sorted(games.items())
    }
