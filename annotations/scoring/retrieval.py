"""Cross-modal retrieval (report <-> case): cosine ranking, recall@k and median rank.

API:
- `cosine_similarity(queries, candidates) -> np.ndarray`: `(n_queries, n_candidates)`, float64.
- `pooled_embedding(vectors) -> np.ndarray`: one vector for a case seen through several
  images (the mean of the unit-length vectors, itself made unit length).
- `ranked_candidates(similarity) -> np.ndarray`: candidate indices best first, per query.
- `ranks_of_relevant(similarity, relevant) -> list[int]`: 1-based rank of the best-ranked
  relevant candidate of each query (`relevant[i]` is an index or a collection of indices:
  a case with several reports is found as soon as one of them is, the COCO/Flickr rule).
- `cross_modal_ranks(report_vectors, case_vectors, report_case) -> CrossModalRanks`: both
  directions at once, within one benchmark.
- `recall_at_k(ranks, k) -> float`, `median_rank(ranks) -> float`,
  `retrieval_metrics(ranks) -> {"recall_at_1", "recall_at_5", "recall_at_10", "median_rank"}`.

Ranking rule: candidates are sorted by decreasing cosine similarity; exactly equal similarities
are broken by candidate index, lower first (a stable sort), so the same vectors always give the
same ranks. A zero vector has similarity 0 with everything (it carries no direction); a NaN or
infinite component raises ValueError.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "RECALL_KS",
    "CrossModalRanks",
    "cosine_similarity",
    "cross_modal_ranks",
    "median_rank",
    "pooled_embedding",
    "ranked_candidates",
    "ranks_of_relevant",
    "recall_at_k",
    "retrieval_metrics",
]

RECALL_KS = (1, 5, 10)


def _matrix(vectors: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float64)
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2D array (one vector per row), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} hold NaN or infinite values")
    return array


def _unit_rows(array: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


def cosine_similarity(queries: ArrayLike, candidates: ArrayLike) -> np.ndarray:
    """Cosine similarity of every query row with every candidate row."""
    query_matrix, candidate_matrix = _matrix(queries, "queries"), _matrix(candidates, "candidates")
    if query_matrix.shape[1] != candidate_matrix.shape[1]:
        raise ValueError(
            f"queries have {query_matrix.shape[1]} dimensions, candidates {candidate_matrix.shape[1]}"
        )
    return _unit_rows(query_matrix) @ _unit_rows(candidate_matrix).T


def pooled_embedding(vectors: ArrayLike) -> np.ndarray:
    """The unit-length mean of unit-length `vectors` (each image of a case weighs the same)."""
    array = _matrix(vectors, "vectors")
    if len(array) == 0:
        raise ValueError("cannot pool zero vectors")
    return _unit_rows(_unit_rows(array).mean(axis=0, keepdims=True))[0]


def ranked_candidates(similarity: ArrayLike) -> np.ndarray:
    """Per query row, the candidate indices from most to least similar (ties: lower index first)."""
    matrix = _matrix(similarity, "similarities")
    return np.argsort(-matrix, axis=1, kind="stable")


def ranks_of_relevant(
    similarity: ArrayLike, relevant: Sequence[int | Collection[int]]
) -> list[int]:
    """1-based rank of each query's best-ranked relevant candidate."""
    matrix = _matrix(similarity, "similarities")
    if len(relevant) != matrix.shape[0]:
        raise ValueError(f"{matrix.shape[0]} queries but {len(relevant)} relevance entries")
    order = ranked_candidates(matrix)
    positions = np.empty_like(order)
    rows = np.arange(matrix.shape[0])[:, None]
    positions[rows, order] = np.arange(1, matrix.shape[1] + 1)
    ranks = []
    for query, targets in enumerate(relevant):
        indices = [targets] if isinstance(targets, int | np.integer) else sorted(set(targets))
        if not indices or not all(0 <= index < matrix.shape[1] for index in indices):
            raise ValueError(f"query {query} has no relevant candidate in range: {targets!r}")
        ranks.append(int(positions[query, indices].min()))
    return ranks


@dataclass(frozen=True)
class CrossModalRanks:
    """Ranks in both directions. Case indices refer to the rows of the case vectors.

    `report_to_case[r]` is the rank of report r's own case among all cases; `report_case[r]`
    that case's index. `case_to_report[q]` is the rank of the best of case `queried_cases[q]`'s
    reports among all reports; only cases with at least one report are queried.
    """

    report_to_case: tuple[int, ...]
    report_case: tuple[int, ...]
    case_to_report: tuple[int, ...]
    queried_cases: tuple[int, ...]


def cross_modal_ranks(
    report_vectors: ArrayLike, case_vectors: ArrayLike, report_case: Sequence[int]
) -> CrossModalRanks:
    """Report->case and case->report ranks by cosine similarity; `report_case[r]` is r's case."""
    similarity = cosine_similarity(report_vectors, case_vectors)
    n_cases = similarity.shape[1]
    if len(report_case) != similarity.shape[0]:
        raise ValueError(f"{similarity.shape[0]} reports but {len(report_case)} case indices")
    if any(not 0 <= case < n_cases for case in report_case):
        raise ValueError(f"a report points to a case outside 0..{n_cases - 1}")
    reports_of: dict[int, list[int]] = {}
    for report, case in enumerate(report_case):
        reports_of.setdefault(int(case), []).append(report)
    queried = sorted(reports_of)
    return CrossModalRanks(
        report_to_case=tuple(ranks_of_relevant(similarity, [int(c) for c in report_case])),
        report_case=tuple(int(case) for case in report_case),
        case_to_report=tuple(
            ranks_of_relevant(similarity.T[queried], [reports_of[c] for c in queried])
        ),
        queried_cases=tuple(queried),
    )


def _check_ranks(ranks: Sequence[int]) -> None:
    if any(rank < 1 for rank in ranks):
        raise ValueError("ranks start at 1")


def recall_at_k(ranks: Sequence[int], k: int) -> float:
    """Share of queries whose relevant candidate is within the top `k`; NaN with no queries."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    _check_ranks(ranks)
    if not ranks:
        return math.nan
    return sum(rank <= k for rank in ranks) / len(ranks)


def median_rank(ranks: Sequence[int]) -> float:
    """Median 1-based rank (mean of the two middle ranks when even); NaN with no queries."""
    _check_ranks(ranks)
    return float(statistics.median(ranks)) if ranks else math.nan


def retrieval_metrics(ranks: Sequence[int]) -> dict[str, float]:
    """`recall_at_1`, `recall_at_5`, `recall_at_10` and `median_rank` of one direction."""
    metrics = {f"recall_at_{k}": recall_at_k(ranks, k) for k in RECALL_KS}
    metrics["median_rank"] = median_rank(ranks)
    return metrics
