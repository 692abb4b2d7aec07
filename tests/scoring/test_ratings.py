from __future__ import annotations

import math

import pytest

from annotations.scoring.ratings import (
    bootstrap_intervals,
    bradley_terry,
    win_rate_matrix,
)

# gpt beats both others every time; llava and qwen split their games.
LEAGUE = (
    [("gpt", "llava", 1.0)] * 6
    + [("qwen", "gpt", 0.0)] * 6
    + [("llava", "qwen", 1.0)] * 4
    + [("llava", "qwen", 0.0)] * 3
    + [("qwen", "llava", 0.5)] * 2
)


def test_it_ranks_a_model_that_always_wins_first() -> None:
    ratings = bradley_terry(LEAGUE)

    assert max(ratings, key=ratings.__getitem__) == "gpt"
    assert ratings["gpt"] > ratings["llava"] + 100
    assert all(math.isfinite(rating) for rating in ratings.values())


def test_it_centres_ratings_on_1000() -> None:
    ratings = bradley_terry(LEAGUE)

    assert sum(ratings.values()) / len(ratings) == pytest.approx(1000.0)


def test_it_gives_equal_ratings_for_symmetric_results() -> None:
    comparisons = [
        ("a", "b", 1.0),
        ("b", "a", 1.0),
        ("b", "c", 0.5),
        ("c", "a", 1.0),
        ("a", "c", 1.0),
        ("c", "b", 0.5),
    ]

    ratings = bradley_terry(comparisons)

    assert ratings == pytest.approx({"a": 1000.0, "b": 1000.0, "c": 1000.0})


def test_it_approaches_the_likelihood_gap_as_grades_accumulate() -> None:
    # Winning 3 games in 4 means a strength ratio of 3: a gap of 400 * log10(3) = 190.85 points.
    # The one-tie prior shrinks it slightly, by well under a point with 400 games.
    comparisons = [("a", "b", 1.0)] * 300 + [("a", "b", 0.0)] * 100

    ratings = bradley_terry(comparisons)

    assert ratings["a"] - ratings["b"] == pytest.approx(190.85, abs=1.0)
    assert ratings["a"] - ratings["b"] < 190.85


def test_it_returns_no_ratings_without_comparisons() -> None:
    assert bradley_terry([]) == {}
    assert bootstrap_intervals([]) == {}
    assert win_rate_matrix([]) == {}


def test_it_rejects_outcomes_outside_0_1_and_self_matches() -> None:
    with pytest.raises(ValueError):
        bradley_terry([("a", "b", 2.0)])
    with pytest.raises(ValueError):
        bradley_terry([("a", "a", 1.0)])


def test_its_intervals_contain_the_point_estimate() -> None:
    ratings = bradley_terry(LEAGUE)

    intervals = bootstrap_intervals(LEAGUE, n_boot=200, seed=3)

    assert set(intervals) == set(ratings)
    for model, (low, high) in intervals.items():
        assert low < ratings[model] < high


def test_its_intervals_are_reproducible_with_a_seed() -> None:
    first = bootstrap_intervals(LEAGUE, n_boot=100, seed=7)
    again = bootstrap_intervals(LEAGUE, n_boot=100, seed=7)
    other = bootstrap_intervals(LEAGUE, n_boot=100, seed=8)

    assert first == again
    assert first != other


def test_it_tabulates_win_rates_with_ties_as_half_points() -> None:
    matrix = win_rate_matrix(LEAGUE)

    assert matrix["gpt"] == {"llava": 1.0, "qwen": 1.0}
    # llava vs qwen: 4 wins, 3 losses, 2 ties -> (4 + 1) / 9
    assert matrix["llava"]["qwen"] == pytest.approx(5 / 9)
    assert matrix["qwen"]["llava"] == pytest.approx(4 / 9)
    assert matrix["llava"]["gpt"] == 0.0


def test_it_leaves_out_pairs_that_never_met() -> None:
    matrix = win_rate_matrix([("a", "b", 1.0), ("b", "c", 0.0)])

    assert "c" not in matrix["a"]
    assert matrix["c"] == {"b": 1.0}


def test_a_400_point_gap_means_ten_to_one_odds() -> None:
    comparisons = [("a", "b", 1.0)] * 1000 + [("a", "b", 0.0)] * 100

    ratings = bradley_terry(comparisons)

    assert ratings["a"] - ratings["b"] == pytest.approx(400.0, abs=1.0)
