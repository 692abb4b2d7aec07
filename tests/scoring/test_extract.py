from __future__ import annotations

import pytest

from annotations.scoring.extract import (
    extract_mcq,
    extract_medqdeg,
    is_refusal,
    medqdeg_hit,
    medqdeg_value,
)

ENDOSCOPY_OPTIONS = {"A": "Polyp", "B": "Ulcer", "C": "Normal mucosa", "D": "Bleeding"}
# Option texts total 5 + 5 + 13 + 8 = 31 characters, so a "short" answer is at most 62.

MCQ_CASES = [
    # A bare letter, in any of the usual wrappings.
    ("A", "A"),
    ("(B)", "B"),
    ("[C]", "C"),
    ("**D**", "D"),
    ("  B  \n", "B"),
    ("Answer: D", "D"),
    ("The answer is C.", "C"),
    ("C. Polyp", "C"),  # the letter wins over the (wrong) text after it
    ("A) polyp", "A"),
    ("Option B: Ulcer", "B"),
    ("A polyp is seen", "A"),  # VLMEvalKit cannot tell the article from option A either
    # Two letters: ambiguous unless "answer is X" settles it.
    ("I think it is A or B", None),
    ("B\nC", None),
    ("The answer is B, not A.", "B"),
    ("Looking at the image, A could be polyp but B is more likely; the final answer is B", "B"),
    # A lone letter that is not among the last four tokens is not read as the answer...
    ("B, because the lesion bleeds", None),
    # ...unless "answer is" introduces it: case-insensitive, A-D only, no bracket, first wins.
    ("The answer is B because the mucosa shows a clear ulcer crater with fibrin", "B"),
    ("the answer is d", "D"),
    ("The answer is actually B, judging by the crater", "A"),  # the "a" of "actually"
    ("ANSWER IS (C) given the pale, smooth and regular pattern of the mucosa", None),
    ("The correct answer is **C**, given the pale and smooth pattern of the mucosa", "C"),
    # A bare letter is case-sensitive; quotes and hyphens are not punctuation there.
    ("a", None),
    ("'A'", None),
    # Letters that are not options.
    ("E", None),
    ("Z", None),  # VLMEvalKit's own "none of the above"
    # Exactly one option text in a short answer.
    ("polyp", "A"),
    ("Normal mucosa.", "C"),
    ("Polyp and ulcer", None),
    ("The image shows normal mucosa without any polyp", None),
    ("ulcer, judging by the " + "appearance of the surrounding tissue " * 3, None),  # too long
    # Refusals and failures.
    ("", None),
    ("   ", None),
    ("Cannot determine the answer from this image.", None),
    ("I'm sorry, but without the image provided I cannot answer.", None),
    ("Failed to obtain answer via API.", None),
    # A polite opening is not one of VLMEvalKit's reject phrases: the answer still counts.
    ("I'm sorry, but the answer is B", "B"),
]


@pytest.mark.parametrize(("prediction", "expected"), MCQ_CASES)
def test_it_reads_mcq_answers_like_vlmevalkit(prediction: str, expected: str | None) -> None:
    assert extract_mcq(prediction, ENDOSCOPY_OPTIONS) == expected


def test_it_ignores_empty_options_when_reading_letters_and_texts() -> None:
    options = {"A": "Polyp", "B": "", "C": None, "D": "Ulcer"}

    assert extract_mcq("B", options) is None
    assert extract_mcq("polyp", options) == "A"
    # B is not an option, so D is the only option letter present.
    assert extract_mcq("B or D", options) == "D"


def test_it_returns_none_for_a_missing_prediction() -> None:
    assert extract_mcq(None, ENDOSCOPY_OPTIONS) is None
    assert extract_medqdeg(None) is None


def test_it_treats_z_as_an_ordinary_letter_when_z_is_an_option() -> None:
    options = {letter: f"finding {letter}" for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}

    assert extract_mcq("Z", options) == "Z"


MEDQDEG_CASES = [
    ("A", "A"),
    ("b", "B"),  # the reference upper-cases the answer first
    (" c \n", "C"),
    ("C. Polyp", "C"),
    ("D) bleeding", "D"),
    ("E something", "E"),
    ("The answer is B", "B"),  # the first lone letter: "THE ANSWER IS B"
    ("Option c", "C"),
    ("answer is B. A was wrong", "B"),
    ("A was wrong, the answer is B", "A"),
    ("B: ulcer", "B"),
    ("A-polyp", "A"),
    ("I think (B)", "B"),
    ("this is a polyp", "A"),  # upper-casing turns the article into option A, as in the reference
    ("none", None),
    ("AB", None),
    ("F", None),
    ("", None),
]


@pytest.mark.parametrize(("prediction", "expected"), MEDQDEG_CASES)
def test_it_reads_medqdeg_answers_like_the_benchmark(prediction: str, expected: str | None) -> None:
    assert extract_medqdeg(prediction) == expected


def test_medqdeg_reads_any_letter_a_to_e_whatever_the_options() -> None:
    # Its "answer is"/"option" rule never fires: the first lone letter wins.
    assert extract_medqdeg("Not B: the answer is A") == "B"
    assert extract_medqdeg("I'd say C") == "D"
    assert medqdeg_value("  Not sure \n") == "Not sure"  # no letter: the stripped reply
    assert medqdeg_value("F") == "F"


def test_medqdeg_compares_the_passed_through_reply_with_the_gold_letter() -> None:
    assert medqdeg_hit("B", " b ")
    assert not medqdeg_hit("Not sure", "B")
    assert not medqdeg_hit(None, "B")  # a missing reply compares as "NAN"


def test_the_api_failure_text_stops_letters_but_not_option_texts() -> None:
    gases = {"A": "argon", "B": "nitrogen", "C": "carbon dioxide"}
    assert extract_mcq("Failed to obtain answer via API. The answer is A.", gases) is None
    assert extract_mcq("Failed to obtain answer via API. carbon dioxide", gases) == "C"
    # The failure sentence itself holds the text of option B here.
    verbs = {"A": "ignore", "B": "obtain", "C": "discard"}
    assert extract_mcq("Failed to obtain answer via API.", verbs) == "B"


def test_the_length_limit_counts_what_is_not_stripped() -> None:
    options = {"A": "six", "B": "five"}  # 7 characters: a reply of at most 14 is "short"
    assert extract_mcq("five" + " " * 10, options) == "B"
    assert extract_mcq("five" + " " * 11, options) is None
    assert extract_mcq("five" + "\n" * 11, options) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Cannot determine the answer", True),
        ("I'm sorry, I can't help with that.", True),
        ("I cannot tell from this image.", True),
        ("Sorry, the image is too dark.", True),
        ("I am unable to assess this frame.", True),
        ("A", False),
        ("The answer is B; sorry for the delay.", False),
        ("", False),
        (None, False),
    ],
)
def test_it_recognises_refusals(text: str | None, expected: bool) -> None:
    assert is_refusal(text) is expected
