"""Pure scoring: answer extraction, accuracy breakdowns, agreement, ratings, box and text metrics.

No Django here (DESIGN.md): functions take and return plain data so that workers, views and
management commands can all call them.
"""

from __future__ import annotations

from annotations.scoring.accuracy import Score, breakdown, vlmeval_report, wilson_interval
from annotations.scoring.agreement import (
    cohen_kappa,
    krippendorff_alpha_nominal,
    percent_agreement,
    weighted_kappa,
)
from annotations.scoring.boxes import average_precision, iou, iou_2d, iou_3d
from annotations.scoring.extract import extract_mcq, extract_medqdeg, is_refusal
from annotations.scoring.ratings import bootstrap_intervals, bradley_terry, win_rate_matrix
from annotations.scoring.text import bleu4, macro_f1, median_rank, recall_at_k, rouge_l

__all__ = [
    "Score",
    "average_precision",
    "bleu4",
    "bootstrap_intervals",
    "bradley_terry",
    "breakdown",
    "cohen_kappa",
    "extract_mcq",
    "extract_medqdeg",
    "iou",
    "iou_2d",
    "iou_3d",
    "is_refusal",
    "krippendorff_alpha_nominal",
    "macro_f1",
    "median_rank",
    "percent_agreement",
    "recall_at_k",
    "rouge_l",
    "vlmeval_report",
    "weighted_kappa",
    "wilson_interval",
    "win_rate_matrix",
]
