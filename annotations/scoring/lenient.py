"""Our lenient reading: the letter a careful reader takes from replies VLMEvalKit leaves unread.

VLMEvalKit's letter always comes first (`read_reply` only asks here when it has none), and the
lenient score is a second score beside VLMEvalKit's, never in its place. The readings, on the
NFKC-normalised reply (full-width letters and colons become ASCII):

- the whole reply is one option letter in any case, once wrappers are taken off: quotes,
  back-ticks, brackets, markdown emphasis, `\\boxed{}`, `<answer>` tags, a final full stop;
- a statement names the letter: "the answer is b", "answer: (c)", "Option D" (opening the
  reply), "答案是B",
  "答案为（C）", "正确答案：E", "选B", "B选项". A lower-case letter counts only when nothing but
  punctuation follows it, so "the answer is a polyp" is not A;
- statements naming different letters cancel out ("answer: A ... the correct answer is F").

Only letters of the item's options are read.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

_WRAPPERS = re.compile(
    r"""^(?:\\boxed\{|<answer>|[\s"'`*_#(\[{<「『【])*"""  # opening wrappers
    r"""([A-Za-z])"""
    r"""(?:\}|</answer>|[\s"'`*_)\]}>」』】.。])*$"""  # closing wrappers, a final full stop
)
# What may stand right after a stated letter: anything but a letter or digit. A lower-case letter
# must be followed by punctuation or the end only (not by a word: "answer is a polyp").
_UPPER_END = r"(?![A-Za-z0-9])"
_LOWER_END = r"(?=\s*(?:$|[.,;:!?)\]}>*'\"`。，；：！？）】」]))"
_LETTER = r"[\s*_(\[（【'\"`]*([A-Za-z])[)\]）】'\"`*_]*"
_STATEMENTS = (
    re.compile(r"\banswer(?:\s+is|\s*:)\s*:?" + _LETTER, re.IGNORECASE),
    # "option B" only opening the reply: inside a sentence ("option A is wrong") it names no answer.
    re.compile(r"^(?:the\s+)?(?:option|choice)\s*[-:]?" + _LETTER, re.IGNORECASE),
    re.compile(r"(?:答案(?:是|为|应为|:)|选择|选项|选)" + _LETTER),
)
_LETTER_BEFORE = re.compile(r"(?<![A-Za-z])([A-Za-z])[)）]?\s*选项")
_OR_ANOTHER = re.compile(r"\s+(?:or|and|nor|/)\s", re.IGNORECASE)


def extract_lenient(reply: str | None, letters: Collection[str]) -> str:
    """The option letter (one of `letters`) our extra readings take from `reply`, or ''."""
    if not reply:
        return ""
    text = unicodedata.normalize("NFKC", reply).strip()
    whole = _WRAPPERS.match(text)
    if whole:
        letter = whole.group(1).upper()
        return letter if letter in letters else ""
    found = {letter for letter in _stated_letters(text) if letter in letters}
    return found.pop() if len(found) == 1 else ""


def _stated_letters(text: str) -> list[str]:
    letters = []
    for pattern in _STATEMENTS:
        for match in pattern.finditer(text):
            letter, rest = match.group(1), text[match.end() :]
            end = _UPPER_END if letter.isupper() else _LOWER_END
            if re.match(end, rest) and not _OR_ANOTHER.match(rest):
                letters.append(letter.upper())
    letters.extend(match.group(1).upper() for match in _LETTER_BEFORE.finditer(text))
    return letters
