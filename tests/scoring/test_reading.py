from __future__ import annotations

import pytest

from annotations.scoring import Reading, extract_lenient, read_reply

LESIONS = {"A": "Polyp", "B": "Ulcer", "C": "Normal mucosa", "D": "Bleeding", "E": ""}


def read(reply: str, family: str = "endobench", answer: str = "B", options=LESIONS) -> Reading:
    return read_reply(family=family, reply=reply, options=options, answer=answer)


@pytest.mark.parametrize("family", ["vlmeval", "endobench", "gastricx"])
def test_a_letter_vlmevalkit_reads_is_the_letter_and_the_lenient_letter(family):
    assert read("The answer is B", family) == Reading("B", True, "B", True, judge_applies=False)
    assert read("(C)", family) == Reading("C", False, "C", False)


def test_lenient_readings_only_fill_in_where_vlmevalkit_reads_nothing():
    assert read("答案是B") == Reading("", False, "B", True, judge_applies=True)
    assert read("the answer is b.") == Reading("B", True, "B", True)
    # VLMEvalKit's quirk ("d" of "definitely") is its letter, so it is the lenient one too.
    definitely = "The answer is definitely B, as the crater has a fibrin base and raised edges"
    assert read(definitely) == Reading("D", False, "D", False)
    assert read("'b'") == Reading("", False, "B", True, judge_applies=True)
    assert read("Option E") == Reading("", False, "", False, judge_applies=True)  # empty option


def test_a_refusal_is_z_without_a_judge_step_and_an_unread_reply_asks_for_one():
    refused = read("Cannot determine the answer from this frame.")
    assert (refused.letter, refused.hit, refused.judge_applies) == ("", False, False)
    assert read("Z").judge_applies is False  # the model's own "none of these"
    assert read("It looks like a small lesion to me overall").judge_applies is True


def test_a_reply_spelled_like_a_missing_value_is_scored_as_nan():
    yes_no = {"A": "Yes", "B": "No", "C": "n"}
    # Direct matching would read "None" as "No"; VLMEvalKit's prediction file makes it "nan".
    assert read("None", answer="B", options=yes_no) == Reading("C", False, "C", False)
    assert read("", answer="C", options=yes_no).hit is True


def test_a_carriage_return_is_read_as_vlmevalkits_file_gives_it_back():
    # "B\r\n" comes back from the .xlsx prediction file as "B_x000D_\n": no letter there.
    reading = read("B\r\n")
    assert (reading.letter, reading.hit) == ("", False)
    assert (reading.lenient_letter, reading.lenient_hit) == ("B", True)


def test_an_option_pandas_reads_as_missing_is_no_option():
    options = {"A": "Present", "B": "Absent", "C": "None"}
    assert read("C", answer="C", options=options).letter == ""
    assert read("C", answer="C", options=options).lenient_letter == ""


def test_medqdeg_uses_its_own_extractor_and_hit_rule():
    assert read("this is a polyp", "medqdeg", answer="A") == Reading("A", True, "A", True)
    assert read("b", "medqdeg") == Reading("B", True, "B", True)
    unsure = read("Not sure", "medqdeg")
    assert (unsure.letter, unsure.hit, unsure.judge_applies) == ("", False, False)
    # A letter beyond the item's options still counts as MedQ-DEG's letter.
    assert read("E", "medqdeg", options={"A": "x", "B": "y"}).letter == "E"
    assert read("N/A", "medqdeg", answer="A").hit is False  # NaN there, not the lone A


def test_an_option_z_is_a_letter_and_z_still_means_no_option_elsewhere():
    options = {letter: f"finding {letter}" for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
    assert read("Z", answer="Z", options=options) == Reading("Z", True, "Z", True)


def test_it_refuses_an_unknown_family():
    with pytest.raises(ValueError, match="unknown family"):
        read("A", family="mmbench")


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("答案是F", "F"),
        ("我认为答案是B", "B"),
        ("答案为（C）", "C"),
        ("正确答案：E", "E"),
        ("应选b", "B"),
        ("B选项", "B"),
        ("选项D", "D"),
        ("the answer is b", "B"),
        ("Answer: c.", "C"),
        ("Answer：B", "B"),
        ("'B'", "B"),
        ('"H"', "H"),
        ("`C`", "C"),
        ("__G__", "G"),
        ("<answer>B</answer>", "B"),
        ("\\boxed{C}", "C"),
        ("Ｂ", "B"),
        ("h", "H"),
        ("OptionB", "B"),
        ("The answer is E.\nThe answer is E.", "E"),
        # Not read: a word after a lower-case letter, two letters, letters in words.
        ("the answer is a polyp", ""),
        ("Answer: A or B", ""),
        ("Answer: D. On second thought, the correct answer is F.", ""),
        ("CC", ""),
        ("B-type", ""),
        ("A?", ""),
        ("答案是Z", ""),  # not an option here
        ("", ""),
    ],
)
def test_the_lenient_readings(reply: str, letter: str):
    assert extract_lenient(reply, "ABCDEFGH") == letter
