"""Turn a model's free-text answer into an option letter, the way the benchmarks score it.

Two extraction rules live here because the two benchmark families disagree on edge cases, and a
leaderboard is only comparable with the published one if we score exactly as the reference does:

- `extract_mcq` follows VLMEvalKit's exact-matching path for generic image MCQ (EndoBench, our own
  releases): `can_infer_option`, then `can_infer_text`, with no judge model (FORMATS.md,
  "Scoring without a judge model").
- `extract_medqdeg` follows the MedQ-DEG-Bench dataset class, which upper-cases the answer first
  and so reads a lower-case "a" as option A.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping

# VLMEvalKit's `can_infer_option` answers "Z" (counted wrong) when one of these is a substring of
# the prediction; matching is case-sensitive there, so it is here.
VLMEVAL_REJECT_PHRASES: tuple[str, ...] = (
    "Sorry, I can't help with images of people yet.",
    "I can't process this file.",
    "I'm sorry, but without the image provided",
    "Cannot determine the answer",
    # VLMEvalKit marks a failed API call this way and then still tries the option texts; we
    # stop, since text found in an error message is never the model's answer.
    "Failed to obtain answer via API",
)

# Openings of a plain refusal. Only `is_refusal` uses them (to count refusals on a leaderboard):
# VLMEvalKit still extracts "I'm sorry, but the answer is B" as B, so `extract_mcq` must too.
_REFUSAL_OPENINGS = re.compile(
    r"^\W*(i\s+cannot|i\s+can't|i\s+can\s*not|i'm\s+sorry|i\s+am\s+sorry|sorry\b|"
    r"i'm\s+unable|i\s+am\s+unable|i'm\s+not\s+able|i\s+am\s+not\s+able|unable\s+to\s+determine)",
    re.IGNORECASE,
)

# `can_infer_option` turns exactly these characters into spaces before splitting into tokens;
# note that '-', '"' and "'" are NOT among them, so "A-" or "'A'" is not a standalone letter.
_VLMEVAL_PUNCTUATION = ".()[],:;!*#{}"
_VLMEVAL_PUNCTUATION_TABLE = str.maketrans(_VLMEVAL_PUNCTUATION, " " * len(_VLMEVAL_PUNCTUATION))

# A letter counts only if its first occurrence is among the last four tokens: VLMEvalKit keeps it
# when `splits.index(letter) > len(splits) - 5`. VLMEvalKit's history holds other variants (no
# position check at all; no length limit in `can_infer_text`); we follow FORMATS.md, which
# describes this one ("among the last tokens", "a short answer").
_LAST_TOKENS = 4

# "answer is" in any case, but the letter itself upper case only.
_ANSWER_IS = re.compile(r"(?i:answer\s+is)\s*[:(\[]?\s*([A-Z])(?![A-Za-z])")


def is_refusal(text: str | None) -> bool:
    """Whether a prediction declines to answer (VLMEvalKit's reject phrases or a refusal opening)."""
    if not text or not text.strip():
        return False
    return _has_vlmeval_reject_phrase(text) or bool(_REFUSAL_OPENINGS.match(text.strip()))


def extract_mcq(prediction: str | None, options: Mapping[str, str | None]) -> str | None:
    """The option letter VLMEvalKit's exact matching would read from `prediction`, else None.

    `options` maps upper-case letters to option texts; empty or missing texts are not options
    (VLMEvalKit drops empty cells before scoring). None means "no answer" and scores as wrong,
    which is what VLMEvalKit's "Z" means when it runs without a judge model.
    """
    if prediction is None:
        return None
    # VLMEvalKit strips the prediction before matching (`extract_answer_from_item`).
    answer = str(prediction).strip()
    choices = _usable_choices(options)
    if not answer or not choices or _has_vlmeval_reject_phrase(answer):
        return None
    tokens = answer.translate(_VLMEVAL_PUNCTUATION_TABLE).split()
    letters_found = [letter for letter in choices if letter in tokens]
    if len(letters_found) == 1:
        letter = letters_found[0]
        if tokens.index(letter) >= len(tokens) - _LAST_TOKENS:
            return letter
    elif not letters_found and "Z" in tokens:
        # VLMEvalKit reads a lone "Z" as the model's own "none of the options" and stops there,
        # without trying the option texts.
        return None
    return _answer_is_letter(answer, choices) or _single_option_text(answer, choices)


def _usable_choices(options: Mapping[str, str | None]) -> dict[str, str]:
    return {
        letter: str(text)
        for letter, text in options.items()
        if len(letter) == 1 and letter in string.ascii_uppercase
        if text is not None and str(text).strip()
    }


def _has_vlmeval_reject_phrase(text: str) -> bool:
    return any(phrase in text for phrase in VLMEVAL_REJECT_PHRASES)


def _answer_is_letter(answer: str, choices: Mapping[str, str]) -> str | None:
    # Not in VLMEvalKit's `can_infer_option`; FORMATS.md lists it as the second rule, so we follow
    # FORMATS.md literally. The letter must be upper case ("the answer is a polyp" is not A), and
    # must be the only letter so introduced ("answer is B ... answer is C" stays unread).
    letters = {letter for letter in _ANSWER_IS.findall(answer) if letter in choices}
    return letters.pop() if len(letters) == 1 else None


def _single_option_text(answer: str, choices: Mapping[str, str]) -> str | None:
    # VLMEvalKit's `can_infer_text`: case-insensitive containment of exactly one option text, and
    # only in a "short" answer, no longer than twice the options' total length.
    lowered = answer.lower()
    if len(lowered) > 2 * sum(len(text) for text in choices.values()):
        return None
    hits = [letter for letter, text in choices.items() if text.lower() in lowered]
    return hits[0] if len(hits) == 1 else None


def extract_medqdeg(prediction: str | None, letters: str = "ABCDE") -> str | None:
    """The option letter MedQ-DEG-Bench's scorer reads from `prediction`, else None.

    The first rule that matches wins, on the stripped, upper-cased answer: the whole answer is a
    letter; it starts with `X.`, `X)` or `X` and whitespace; `answer is X` or `option X`; it starts
    with `X:` or `X -`; the first letter standing alone (no A–Z letter either side). Because the
    reference upper-cases first, "this is a polyp" reads as A there, and so it does here.
    """
    if prediction is None:
        return None
    answer = str(prediction).strip().upper()
    if not answer or not letters:
        return None
    letters = letters.upper()
    if len(answer) == 1 and answer in letters:
        return answer
    valid = f"[{re.escape(letters)}]"
    rules = (
        rf"^({valid})[.)\s]",
        rf"(?:ANSWER\s+IS\s+|OPTION\s+)({valid})(?:[^A-Z]|$)",
        rf"^({valid})\s*[-:]",
        rf"(?:^|[^A-Z])({valid})(?:[^A-Z]|$)",
    )
    for rule in rules:
        match = re.search(rule, answer)
        if match:
            return match.group(1)
    return None
