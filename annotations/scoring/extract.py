"""Turn a model's free-text answer into an option letter exactly as VLMEvalKit does, quirks included.

Both rules reproduce VLMEvalKit at `VLMEVAL_COMMIT` (see `annotations.scoring.vlmeval`); the
conformance corpus in tests/scoring/conformance/ is the truth, not these comments:

- `vlmeval_opt` / `extract_mcq`: the generic multiple-choice exact matching
  (`extract_answer_from_item` without a judge, i.e. `can_infer`): option letters standing among
  the last four words, then a first "answer is A–D" statement, then exactly one option text in a
  short reply. EndoBench, Gastric-X and plain VLMEvalKit releases are scored by it.
- `medqdeg_value` / `extract_medqdeg`: `MedQDEGBenchDataset._extract_option_letter`.

Readings VLMEvalKit does not make live in `lenient`, never here.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping

NO_OPTION = "Z"  # VLMEvalKit's letter for "no option"

# VLMEvalKit answers Z when one of these is a substring of the reply (case and apostrophes exact:
# a curly apostrophe is not recognised).
VLMEVAL_REJECT_PHRASES: tuple[str, ...] = (
    "Sorry, I can't help with images of people yet.",
    "I can't process this file.",
    "I'm sorry, but without the image provided",
    "Cannot determine the answer",
)
# Its API wrappers' failure message: it switches off letter reading, not option-text matching.
API_FAILURE = "Failed to obtain answer via API"

# Only these characters become spaces before the reply is cut into words: "-", quotes, back-ticks
# and full-width punctuation stay glued to a letter, so "'B'" or "B-" hold no letter.
_WORD_BREAKS = str.maketrans(dict.fromkeys(".()[],:;!*#{}", " "))
# A letter counts when its first occurrence is among the last four words. (With VLMEvalKit's
# VERBOSE environment variable set, a lone A in a reply of more than three words would not;
# we follow it unset, as the corpus was made.)
_LAST_WORDS = 4
# The "answer is" statement: case-insensitive (so "answer is definitely F" reads the "d" of
# "definitely"), A–D only, optional bold, and the first statement in the reply wins.
_ANSWER_IS = re.compile(r"(?:correct\s+)?answer\s+is\s+\**([ABCD])\**", re.IGNORECASE)

# Openings of a plain refusal. Only `is_refusal` uses them (to count refusals on a leaderboard):
# VLMEvalKit still extracts "I'm sorry, but the answer is B" as B, so the extractors must too.
_REFUSAL_OPENINGS = re.compile(
    r"^\W*(i\s+cannot|i\s+can't|i\s+can\s*not|i'm\s+sorry|i\s+am\s+sorry|sorry\b|"
    r"i'm\s+unable|i\s+am\s+unable|i'm\s+not\s+able|i\s+am\s+not\s+able|unable\s+to\s+determine)",
    re.IGNORECASE,
)

MEDQDEG_LETTERS = "ABCDE"
# MedQ-DEG's ordered rules (whole reply a letter; "X." / "X)" / "X " at the start; an
# "answer is"/"option" pattern; "X:" / "X -" at the start; the first letter standing alone) all
# run on the upper-cased reply. Its "answer is"/"option" pattern is lower case and so never
# matches upper-cased text, and every other rule finds the same letter as the last one: the
# first A–E with no A–Z letter on either side wins.
_MEDQDEG_LONE_LETTER = re.compile(r"(?<![A-Z])[A-E](?![A-Z])")


def vlmeval_choices(options: Mapping[str, str | None]) -> dict[str, str]:
    """The options VLMEvalKit matches against, in letter order: upper-case letter columns whose
    cell is not missing (None or ''; an empty TSV cell is NaN there). Blank text is an option."""
    return {
        letter: str(options[letter])
        for letter in sorted(options)
        if len(letter) == 1 and letter in string.ascii_uppercase
        if options[letter] is not None and options[letter] != ""
    }


def can_infer(text: str, options: Mapping[str, str | None]) -> str:
    """VLMEvalKit's `can_infer`: a choice letter, "Z" (a refusal, or the text's own Z), or ""
    when it reads nothing (where a judge would be asked, or asked again)."""
    choices = vlmeval_choices(options)
    return _letter_or_refusal(text, choices) or _single_option_text(text, choices) or ""


def vlmeval_opt(reply: str, options: Mapping[str, str | None]) -> str:
    """VLMEvalKit's `extract_answer_from_item(None, item)["opt"]`: a choice letter, or "Z"."""
    return can_infer(reply, options) or NO_OPTION


def extract_mcq(prediction: str | None, options: Mapping[str, str | None]) -> str | None:
    """The option letter VLMEvalKit's exact matching reads from `prediction`, else None (its Z;
    with an option Z, VLMEvalKit's Z is that option, so it is returned).

    `prediction` is taken as VLMEvalKit receives it: nothing is stripped. None scores as no
    letter (`read_reply` models what VLMEvalKit's own files make of a missing reply).
    """
    if prediction is None:
        return None
    opt = vlmeval_opt(prediction, options)
    return None if opt == NO_OPTION and NO_OPTION not in vlmeval_choices(options) else opt


def _letter_or_refusal(reply: str, choices: Mapping[str, str]) -> str | None:
    """`can_infer_option`: a letter, "Z" for a refusal, or None to try the option texts."""
    if API_FAILURE in reply:
        return None
    if any(phrase in reply for phrase in VLMEVAL_REJECT_PHRASES):
        return NO_OPTION
    words = reply.translate(_WORD_BREAKS).split()
    named = [letter for letter in choices if letter in words]
    if len(named) == 1:
        if words.index(named[0]) > len(words) - 1 - _LAST_WORDS:
            return named[0]
    elif not named and NO_OPTION in words:
        return NO_OPTION  # the model's own "none of these"
    statement = _ANSWER_IS.search(reply)
    if statement and statement.group(1).upper() in choices:
        return statement.group(1).upper()
    return None


def _single_option_text(reply: str, choices: Mapping[str, str]) -> str | None:
    """`can_infer_text`: the one option whose text is a substring of a short reply (case-blind).

    "Short" is at most twice the options' total length, counted on the lower-cased reply and
    nothing stripped, so trailing newlines count.
    """
    lowered = reply.lower()
    if len(lowered) > 2 * sum(len(text) for text in choices.values()):
        return None
    found = [letter for letter, text in choices.items() if text.lower() in lowered]
    return found[0] if len(found) == 1 else None


def medqdeg_value(prediction: str) -> str:
    """What `MedQDEGBenchDataset._extract_option_letter` returns for a (non-NaN) reply: a letter
    A–E, or else the stripped reply itself, which MedQ-DEG then compares with the gold letter."""
    stripped = prediction.strip()
    found = _MEDQDEG_LONE_LETTER.search(stripped.upper())
    return found.group() if found else stripped


def extract_medqdeg(prediction: str | None) -> str | None:
    """The letter A–E MedQ-DEG-Bench's scorer reads from `prediction`, else None.

    The options do not matter: "E" is read on a four-option question, and "this is a polyp"
    reads as A (the reply is upper-cased first).
    """
    if prediction is None:
        return None
    value = medqdeg_value(prediction)
    return value if len(value) == 1 and value in MEDQDEG_LETTERS else None


def medqdeg_hit(value: str | None, answer: str) -> bool:
    """MedQ-DEG's hit: the gold letter equals the extracted value, both upper-cased (a reply
    passed through whole can still equal it; NaN compares as "NAN")."""
    return answer.strip().upper() == ("NAN" if value is None else value.upper())


def is_refusal(text: str | None) -> bool:
    """Whether a prediction declines to answer (VLMEvalKit's reject phrases or a refusal opening)."""
    if not text or not text.strip():
        return False
    return any(phrase in text for phrase in VLMEVAL_REJECT_PHRASES) or bool(
        _REFUSAL_OPENINGS.match(text.strip())
    )
