"""Cosine ranking, its tie rule, both retrieval directions, recall@k and median rank by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from annotations.scoring.retrieval import (
    cosine_similarity,
    cross_modal_ranks,
    median_rank,
    pooled_embedding,
    ranked_candidates,
    ranks_of_relevant,
    recall_at_k,
    retrieval_metrics,
)

CASES = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
REPORTS = [[1, 0.1, 0], [0, 1, 0.2], [0.6, 0.8, 0], [0, 0.6, 0.8]]
REPORT_CASE = [0, 0, 1, 2]


def test_it_computes_cosine_similarity_by_hand() -> None:
    similarity = cosine_similarity([[1, 0], [0, 2]], [[1, 1], [0, -3]])

    assert similarity == pytest.approx(np.array([[1 / math.sqrt(2), 0], [1 / math.sqrt(2), -1]]))


def test_a_zero_vector_is_similar_to_nothing() -> None:
    assert cosine_similarity([[0, 0]], [[1, 0], [0, 1]]).tolist() == [[0.0, 0.0]]


def test_it_rejects_bad_vectors() -> None:
    with pytest.raises(ValueError, match="NaN"):
        cosine_similarity([[math.nan, 1]], [[1, 0]])
    with pytest.raises(ValueError, match="dimensions"):
        cosine_similarity([[1, 0]], [[1, 0, 0]])
    with pytest.raises(ValueError, match="2D"):
        cosine_similarity([1, 0], [[1, 0]])


def test_it_ranks_by_similarity_and_breaks_ties_by_candidate_index() -> None:
    similarity = [[0.9, 0.5, 0.1], [0.2, 0.3, 0.8], [0.5, 0.5, 0.5]]

    assert ranked_candidates(similarity).tolist() == [[0, 1, 2], [2, 1, 0], [0, 1, 2]]
    assert ranks_of_relevant(similarity, [0, 1, 2]) == [1, 2, 3]
    # several relevant candidates: the best-ranked one counts
    assert ranks_of_relevant(similarity, [{1, 2}, [0, 1], (2,)]) == [2, 2, 3]


def test_it_rejects_relevance_it_cannot_use() -> None:
    with pytest.raises(ValueError, match="relevance entries"):
        ranks_of_relevant([[0.1, 0.2]], [0, 1])
    with pytest.raises(ValueError, match="in range"):
        ranks_of_relevant([[0.1, 0.2]], [2])
    with pytest.raises(ValueError, match="in range"):
        ranks_of_relevant([[0.1, 0.2]], [set()])


def test_it_ranks_both_directions_by_hand() -> None:
    # report -> case: r0 is nearest its case 0; r1 (case 0) is nearer cases 1 and 2 (rank 3);
    # r2 -> case 1 and r3 -> case 2 are first.
    # case -> report: case 0 finds r0 first; case 1 sees r1 (0.98) before its r2 (0.8): rank 2;
    # case 2 finds r3 first.
    ranks = cross_modal_ranks(REPORTS, CASES, REPORT_CASE)

    assert ranks.report_to_case == (1, 3, 1, 1)
    assert ranks.report_case == (0, 0, 1, 2)
    assert ranks.case_to_report == (1, 2, 1)
    assert ranks.queried_cases == (0, 1, 2)


def test_cases_without_reports_are_candidates_but_not_queries() -> None:
    ranks = cross_modal_ranks([[1, 0, 0]], CASES, [0])

    assert ranks.report_to_case == (1,)
    assert ranks.case_to_report == (1,)
    assert ranks.queried_cases == (0,)
    with pytest.raises(ValueError, match="outside"):
        cross_modal_ranks([[1, 0, 0]], CASES, [3])
    with pytest.raises(ValueError, match="case indices"):
        cross_modal_ranks([[1, 0, 0]], CASES, [0, 1])


def test_it_pools_a_cases_images_into_one_unit_vector() -> None:
    # unit vectors (1, 0) and (0, 1): mean (1/2, 1/2), made unit length
    assert pooled_embedding([[2, 0], [0, 1]]) == pytest.approx([1 / math.sqrt(2)] * 2)
    with pytest.raises(ValueError):
        pooled_embedding(np.empty((0, 2)))


def test_it_computes_recall_at_k_and_the_median_rank() -> None:
    ranks = [1, 3, 5, 10, 2]

    assert recall_at_k(ranks, 1) == pytest.approx(1 / 5)
    assert recall_at_k(ranks, 5) == pytest.approx(4 / 5)
    assert recall_at_k(ranks, 10) == pytest.approx(1.0)
    assert median_rank(ranks) == 3.0
    # even count: mean of the middle ranks 2 and 3
    assert median_rank([4, 1, 2, 3]) == 2.5
    assert retrieval_metrics(ranks) == pytest.approx(
        {"recall_at_1": 0.2, "recall_at_5": 0.8, "recall_at_10": 1.0, "median_rank": 3.0}
    )


def test_ranking_metrics_are_nan_without_queries_and_reject_bad_ranks() -> None:
    assert math.isnan(recall_at_k([], 5))
    assert math.isnan(median_rank([]))
    with pytest.raises(ValueError):
        recall_at_k([0, 1], 1)
    with pytest.raises(ValueError):
        recall_at_k([1], 0)
    with pytest.raises(ValueError):
        median_rank([0])
