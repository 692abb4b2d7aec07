from __future__ import annotations

import pytest

from annotations.scoring.judge import build_judge_prompt, read_judge_reply


def test_the_prompt_holds_the_question_the_options_and_the_answer():
    prompt = build_judge_prompt(
        "Which lesion?", {"A": "Polyp", "B": "Ulcer", "C": "", "D": "Bleeding"}, "an ulcer"
    )
    assert "Question: Which lesion?" in prompt
    assert "A. Polyp\nB. Ulcer\nD. Bleeding" in prompt  # an empty option is not offered
    assert "C." not in prompt
    assert "Answer: an ulcer" in prompt
    assert "A, B, D or Z" in prompt


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("B", "B"),
        (" **B** ", "B"),
        ("B.", "B"),
        ("The answer is B", "B"),
        ("Z", ""),
        ("A or B", ""),  # two letters: no decision
        ("E", ""),  # not an option here
        ("", ""),
        ("I cannot tell", ""),  # "I" is not an option letter here
        ("I think it is B", "B"),  # "I" as a word
        ("A polyp is seen, so C", "C"),  # "A" as a word
        ("Option A is correct", "A"),  # named as the option
        ("The answer is: (D)", "D"),
        ("A is correct", "A"),
        ("The answer is A or B", ""),  # still two letters
        ("C looks right", "C"),
    ],
)
def test_the_reply_counts_when_it_names_exactly_one_letter(reply, letter):
    assert read_judge_reply(reply, "ABCD") == letter


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("I", "I"),
        ("**I**", "I"),
        ("I.", "I"),
        ("I cannot tell", ""),  # a word, not option I
        ("I cannot tell which one; Z", ""),
        ("I would say H", "H"),
        ("Option I is the right one", "I"),
        ("Option I describes it", "I"),  # named: a letter, whatever follows
        ("The answer is I", "I"),
        ("A or I", ""),  # two letters
    ],
)
def test_on_nine_options_the_word_i_is_not_option_i(reply, letter):
    assert read_judge_reply(reply, "ABCDEFGHI") == letter
