"""Broken items: flaws visible in the item's own text, before any model or clinician looks."""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable

from annotations.formats.taxonomy import kind_fits_modality, normalise_modality
from annotations.scoring.triage.types import (
    ANSWER_OUT_OF_RANGE,
    DEGRADATION_MODALITY_MISMATCH,
    DUPLICATE_OPTIONS,
    EMPTY_OPTION,
    EMPTY_QUESTION,
    GT_MISMATCH,
    ItemFacts,
    Key,
    Reason,
)
from annotations.scoring.vlmeval import PANDAS_NA_STRINGS

LETTERS = string.ascii_uppercase

WEIGHTS = {
    EMPTY_QUESTION: 0.95,
    ANSWER_OUT_OF_RANGE: 0.95,
    EMPTY_OPTION: 0.7,
    GT_MISMATCH: 0.7,
    DUPLICATE_OPTIONS: 0.6,
    # Imported on purpose (VLMEvalKit reads it), but the pair's degradation is likely mislabelled.
    DEGRADATION_MODALITY_MISMATCH: 0.6,
}


def normalise_text(text: str | None) -> str:
    """Case-folded, NFKC-normalised text with runs of white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text or "").casefold().split())


# A number standing alone ("0.70", "[0.41, 0.57, 0.70, 0.86]", "2.0 cm"), not a part of a word
# ("T1", "N0") or of a dotted name ("1.2.840").
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def _canonical_number(match: re.Match) -> str:
    whole, _, fraction = match.group().partition(".")
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def comparable_text(text: str | None) -> str:
    """`normalise_text` with every number written one way, so that options and gt texts
    compare numbers as numbers: "0.7" is "0.70" and "1.0 cm" is "1 cm"."""
    return _NUMBER.sub(_canonical_number, normalise_text(text))


def reads_as_empty(text: str | None) -> bool:
    """True when pandas (and so VLMEvalKit) would read this cell as a missing value."""
    return text is None or text in PANDAS_NA_STRINGS or text.strip() in PANDAS_NA_STRINGS


def _used_options(item: ItemFacts) -> dict[str, str]:
    """Letter -> text of the options filled in the file (unused trailing columns left out)."""
    options = item.options[: item.max_letters]
    return {LETTERS[i]: text for i, text in enumerate(options) if text is not None and text != ""}


def _empty_question(item: ItemFacts) -> Reason | None:
    if not reads_as_empty(item.question):
        return None
    return Reason(
        EMPTY_QUESTION,
        WEIGHTS[EMPTY_QUESTION],
        "The question is empty (or a text pandas reads as missing).",
        {"question": item.question},
    )


def _empty_options(used: dict[str, str]) -> Reason | None:
    na = {letter: text for letter, text in used.items() if reads_as_empty(text)}
    if not na:
        return None
    listed = ", ".join(f"{letter} = {text!r}" for letter, text in na.items())
    return Reason(
        EMPTY_OPTION,
        WEIGHTS[EMPTY_OPTION],
        f"Option text that pandas and VLMEvalKit read as empty: {listed}.",
        {"options": [{"letter": letter, "text": text} for letter, text in na.items()]},
    )


def _answer_out_of_range(item: ItemFacts, used: dict[str, str]) -> Reason | None:
    answer = (item.answer or "").strip().upper()
    valid = [letter for letter, text in used.items() if not reads_as_empty(text)]
    if answer in valid:
        return None
    return Reason(
        ANSWER_OUT_OF_RANGE,
        WEIGHTS[ANSWER_OUT_OF_RANGE],
        f"The answer {answer or '(none)'!s} is not one of the options {', '.join(valid) or '-'}.",
        {"answer": answer, "letters": valid},
    )


def _duplicate_options(used: dict[str, str]) -> Reason | None:
    seen: dict[str, list[str]] = {}
    for letter, text in used.items():
        if not reads_as_empty(text):
            seen.setdefault(comparable_text(text), []).append(letter)
    repeated = [letters for letters in seen.values() if len(letters) > 1]
    if not repeated:
        return None
    groups = "; ".join(" = ".join(letters) for letters in repeated)
    return Reason(
        DUPLICATE_OPTIONS,
        WEIGHTS[DUPLICATE_OPTIONS],
        f"Options with the same text (numbers compared as numbers): {groups}.",
        {"letters": repeated, "texts": [used[letters[0]] for letters in repeated]},
    )


def _gt_mismatch(item: ItemFacts, used: dict[str, str]) -> Reason | None:
    if item.gt is None or reads_as_empty(item.gt):
        return None
    gt = comparable_text(item.gt)
    answer = (item.answer or "").strip().upper()
    if comparable_text(used.get(answer, "")) == gt:
        return None
    # When gt names another option, the answer letter itself is probably the mistake.
    matches = [letter for letter, text in used.items() if comparable_text(text) == gt]
    weight = WEIGHTS[GT_MISMATCH] + (0.15 if matches else 0.0)
    where = f"; it is the text of option {matches[0]}" if matches else ""
    return Reason(
        GT_MISMATCH,
        weight,
        f"The gt text {item.gt!r} is not the text of the answer {answer}{where}.",
        {
            "gt": item.gt,
            "answer": answer,
            "answer_text": used.get(answer, ""),
            "matches": matches,
        },
    )


def _degradation_mismatch(item: ItemFacts) -> Reason | None:
    modality = normalise_modality(item.modality)
    kind = item.degradation_type
    if not kind or modality is None or kind_fits_modality(kind, modality):
        return None
    return Reason(
        DEGRADATION_MODALITY_MISMATCH,
        WEIGHTS[DEGRADATION_MODALITY_MISMATCH],
        f"The degradation {kind!r} does not apply to {modality} images.",
        {"degradation_type": kind, "modality": modality},
    )


def broken_item(item: ItemFacts) -> list[Reason]:
    """Every breakage of one item: empty question, NA-like or duplicated options, an answer
    letter beyond the options, a `gt` text that is not the answer's option text, a degradation
    that does not apply to the item's modality (MedQ-DEG)."""
    used = _used_options(item)
    found = (
        _empty_question(item),
        _answer_out_of_range(item, used),
        _empty_options(used),
        _gt_mismatch(item, used),
        _duplicate_options(used),
        _degradation_mismatch(item),
    )
    return [reason for reason in found if reason is not None]


def broken_items(items: Iterable[ItemFacts]) -> dict[Key, list[Reason]]:
    """`broken_item` for many items; items without a flaw are left out."""
    result: dict[Key, list[Reason]] = {}
    for item in items:
        reasons = broken_item(item)
        if reasons:
            result[item.key] = reasons
    return result
