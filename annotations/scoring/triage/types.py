"""The plain data triage signals take and return (no Django)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

Key = Hashable  # an item's key (the database id in the app, anything hashable in tests)

# Reason codes, grouped as the triage page filters them.
MODEL_CONSENSUS = "model_consensus"
ANSWERABLE_WITHOUT_IMAGE = "answerable_without_image"
DUPLICATE_IMAGE = "duplicate_image"
DUPLICATE_QUESTION = "duplicate_question"
SPLIT_LEAKAGE = "split_leakage"
EMPTY_QUESTION = "empty_question"
EMPTY_OPTION = "empty_option"
DUPLICATE_OPTIONS = "duplicate_options"
GT_MISMATCH = "gt_mismatch"
ANSWER_OUT_OF_RANGE = "answer_out_of_range"
DEGRADATION_MODALITY_MISMATCH = "degradation_modality_mismatch"
REVIEWER_REJECTED = "reviewer_rejected"
REVIEWER_EDITED = "reviewer_edited"
SLOW_REVIEW = "slow_review"

GROUPS: dict[str, tuple[str, ...]] = {
    "models": (MODEL_CONSENSUS, ANSWERABLE_WITHOUT_IMAGE),
    "duplicates": (SPLIT_LEAKAGE, DUPLICATE_IMAGE, DUPLICATE_QUESTION),
    "broken": (
        EMPTY_QUESTION,
        ANSWER_OUT_OF_RANGE,
        EMPTY_OPTION,
        GT_MISMATCH,
        DUPLICATE_OPTIONS,
        DEGRADATION_MODALITY_MISMATCH,
    ),
    "reviews": (REVIEWER_REJECTED, REVIEWER_EDITED, SLOW_REVIEW),
}
ALL_CODES: tuple[str, ...] = tuple(code for codes in GROUPS.values() for code in codes)


@dataclass
class Reason:
    """Why an item is suspect: a code, a weight in [0, 1], an explanation and its evidence.

    `detail` is a plain-English sentence for the command line and JSON; the app shows a
    translated sentence built from `evidence`, which holds every number the sentence uses.
    """

    code: str
    weight: float
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "weight": round(self.weight, 4),
            "detail": self.detail,
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class ItemFacts:
    """What the broken-item and duplicate checks need to know about one item.

    `group` ties items that legitimately share images (a clean image and its degraded twins,
    the questions of one Gastric-X case): they are never reported as duplicates of each other.
    """

    key: Key
    question: str
    options: tuple[str, ...]
    answer: str
    gt: str | None = None
    split: str = ""
    task: str = ""
    images: tuple[Hashable, ...] = ()  # stored image keys (their sha256 in the app)
    group: Hashable = None
    max_letters: int = 26
    modality: str = ""
    degradation_type: str = ""


@dataclass(frozen=True)
class ReviewFacts:
    """One review as the reviewer signals see it: no reviewer identity (blinding)."""

    item: Key
    verdict: str  # accept / edit / reject
    seconds: float | None = None
    reason: str = ""


@dataclass
class Suspect:
    """One item's combined suspicion score and its reasons, strongest first."""

    key: Key
    score: float
    reasons: list[Reason]

    def codes(self) -> list[str]:
        return [reason.code for reason in self.reasons]
