"""The LLM judge for answers the rules cannot read: the question, its options and the model's
answer go to another model, which names the option the answer means, or Z for none.

This follows VLMEvalKit's second extraction step for multiple-choice benchmarks (a judge model
asked to match a free answer to one option letter, Z when none matches); the wording is ours.
Pure: the prompt and the reading of the judge's reply; the request is the caller's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

NO_MATCH = "Z"

_INSTRUCTIONS = (
    "You help grade a multiple-choice question. You are given the question, its options and "
    "an answer written by a model. Decide which option the answer means. If the answer "
    "matches none of the options, or refuses, or names several, reply Z. Reply with one "
    "uppercase letter only: {letters} or Z."
)


def build_judge_prompt(question: str, options: Mapping[str, str], answer: str) -> str:
    """The judge's request (text only) for one answer."""
    letters = [letter for letter, text in options.items() if str(text).strip()]
    lines = [_INSTRUCTIONS.format(letters=", ".join(letters)), "", f"Question: {question}"]
    lines += ["Options:", *(f"{letter}. {options[letter]}" for letter in letters)]
    lines += [f"Answer: {answer}", "", "Your reply (one letter):"]
    return "\n".join(lines)


_LETTER = re.compile(r"\b([A-Z])\b")
# "I" and "A" are also English words: followed by a lower-case word other than one that speaks
# of a letter ("A or B", "A is right") they are that word ("I cannot tell", "A polyp"), unless
# the reply names them as the option ("option I is", "answer: A").
_WORD_USE = re.compile(r"\b([AI]) +(?!(?:or|and|nor|is|was|seems|matches|fits|looks|best)\b)[a-z]")
_NAMED = re.compile(r"\b(?:answer|option|choice|letter)\s*(?:is|:)?\s*[(*_`'\"]*([A-Z])\b", re.I)


def read_judge_reply(reply: str, letters: str) -> str:
    """The option letter the judge named ('' for Z, several letters or no letter at all).

    A judge sometimes wraps its letter ("**B**", "B.", "The answer is B"): the reply counts
    when exactly one distinct valid letter or Z stands in it as a letter. "I" or "A" used as a
    word ("I cannot tell", "A polyp is seen") does not count, unless the reply names it as the
    option ("Option I is right"): on a benchmark with nine options "I" is a letter too.
    """
    text = reply or ""
    valid = set(letters + NO_MATCH)
    words = {m.start(1) for m in _WORD_USE.finditer(text)}
    found = {m.group(1) for m in _LETTER.finditer(text) if m.start(1) not in words}
    found = (found | {m.group(1) for m in _NAMED.finditer(text)}) & valid
    if len(found) != 1:
        return ""
    letter = found.pop()
    return "" if letter == NO_MATCH else letter
