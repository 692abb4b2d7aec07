"""Pure scoring: answer extraction, accuracy breakdowns, agreement, ratings, box and text metrics.

No Django here (DESIGN.md): functions take and return plain data so that workers, views and
management commands can all call them. Scores that claim to be VLMEvalKit's follow the commit
pinned in `annotations.scoring.vlmeval` (`VLMEVAL_COMMIT`).
"""

from __future__ import annotations

from annotations.scoring.accuracy import (
    Score,
    breakdown,
    medqdeg_score_table,
    printed_as_vlmeval,
    vlmeval_acc_table,
    wilson_interval,
)
from annotations.scoring.agreement import (
    cohen_kappa,
    krippendorff_alpha_nominal,
    percent_agreement,
    weighted_kappa,
)
from annotations.scoring.boxes import average_precision, iou, iou_2d, iou_3d
from annotations.scoring.extract import extract_mcq, extract_medqdeg, is_refusal
from annotations.scoring.judge import (
    JUDGE_ATTEMPTS,
    JudgeVerdict,
    build_judge_prompt,
    judge_verdict,
    read_judge_reply,
)
from annotations.scoring.lenient import extract_lenient
from annotations.scoring.ratings import bootstrap_intervals, bradley_terry, win_rate_matrix
from annotations.scoring.reading import Reading, read_reply
from annotations.scoring.text import bleu4, macro_f1, median_rank, recall_at_k, rouge_l
from annotations.scoring.vlmeval import VLMEVAL_COMMIT

__all__ = [
    "JUDGE_ATTEMPTS",
    "VLMEVAL_COMMIT",
    "JudgeVerdict",
    "Reading",
    "Score",
    "average_precision",
    "bleu4",
    "bootstrap_intervals",
    "bradley_terry",
    "breakdown",
    "build_judge_prompt",
    "cohen_kappa",
    "extract_lenient",
    "extract_mcq",
    "extract_medqdeg",
    "iou",
    "iou_2d",
    "iou_3d",
    "is_refusal",
    "judge_verdict",
    "krippendorff_alpha_nominal",
    "macro_f1",
    "median_rank",
    "medqdeg_score_table",
    "percent_agreement",
    "printed_as_vlmeval",
    "read_judge_reply",
    "read_reply",
    "recall_at_k",
    "rouge_l",
    "vlmeval_acc_table",
    "weighted_kappa",
    "wilson_interval",
    "win_rate_matrix",
]
