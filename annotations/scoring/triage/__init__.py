"""Triage: pure signals that point clinicians at the items most likely to be wrong.

Each signal takes plain data and returns `Reason`s (a code, a weight in [0, 1], a sentence and
its evidence); `combine` turns them into one score per item. No Django here (DESIGN.md).
"""

from __future__ import annotations

from annotations.scoring.triage.blind import TaskBlindness, answerable_without_image
from annotations.scoring.triage.broken import (
    PANDAS_NA_STRINGS,
    broken_item,
    broken_items,
    reads_as_empty,
)
from annotations.scoring.triage.combine import combine, noisy_or
from annotations.scoring.triage.consensus import RunVotes, model_consensus
from annotations.scoring.triage.duplicates import (
    duplicate_reasons,
    image_hashes,
    near_image_pairs,
    near_question_pairs,
)
from annotations.scoring.triage.reviewers import reviewer_signals
from annotations.scoring.triage.types import (
    ALL_CODES,
    GROUPS,
    ItemFacts,
    Reason,
    ReviewFacts,
    Suspect,
)

__all__ = [
    "ALL_CODES",
    "GROUPS",
    "PANDAS_NA_STRINGS",
    "ItemFacts",
    "Reason",
    "ReviewFacts",
    "RunVotes",
    "Suspect",
    "TaskBlindness",
    "answerable_without_image",
    "broken_item",
    "broken_items",
    "combine",
    "duplicate_reasons",
    "image_hashes",
    "model_consensus",
    "near_image_pairs",
    "near_question_pairs",
    "noisy_or",
    "reads_as_empty",
    "reviewer_signals",
]
