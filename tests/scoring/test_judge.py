from __future__ import annotations

import hashlib

import pytest

from annotations.scoring import judge
from annotations.scoring.judge import (
    JUDGE_ATTEMPTS,
    JudgeVerdict,
    build_judge_prompt,
    judge_fallback,
    judge_verdict,
    read_judge_reply,
)

LESIONS = {"A": "Polyp", "B": "Ulcer", "C": "", "D": "Bleeding"}


def test_the_templates_are_vlmevalkits_word_for_word():
    # SHA-256 of the `tmpl` strings of build_prompt and build_prompt_cn in
    # vlmeval/dataset/utils/multiple_choice.py at e8e78f0 (read with ast.literal_eval).
    digests = [
        hashlib.sha256(template.encode()).hexdigest()
        for template in (judge._PROMPT_EN, judge._PROMPT_CN)
    ]
    assert digests == [
        "133b2beaa0ce149aab95c6d01d4629f034e8861c723fc302ab3853a41e690c86",
        "6cd5198da4ff3d4179a6db5bf17eeb181fa9e55caba876e632f7c583ac0eeb7c",
    ]


def test_the_prompt_ends_with_the_item_as_example_3():
    prompt = build_judge_prompt(question="Which lesion", options=LESIONS, reply="an ulcer {x}")
    assert prompt.startswith("You are an AI assistant who will help me to match an answer")
    assert prompt.endswith(
        "Example 3: \nQuestion: Which lesion?\n"
        "Options: There are several options: \nA. Polyp\nB. Ulcer\nD. Bleeding\n\n"
        "Answer: an ulcer {x}\nYour output: "
    )


def test_a_chinese_question_gets_the_chinese_prompt_and_a_missing_reply_reads_nan():
    prompt = build_judge_prompt(question="图中是什么病变", options=LESIONS, reply="N/A")
    assert prompt.startswith("你是一个帮助我匹配答案")
    assert prompt.endswith("问题: 图中是什么病变?\n选项: There are several options: \n"
                           "A. Polyp\nB. Ulcer\nD. Bleeding\n\n答案: nan\n输出: ")  # fmt: skip


@pytest.mark.parametrize(
    ("reply", "opt"),
    [
        ("B", "B"),
        ("**B**", "B"),
        ("Z", "Z"),
        ("The answer is D", "D"),
        ("bleeding", "D"),  # can_infer reads option texts too
        ("A or B", ""),
        ("C", ""),  # an empty option is no option
        ("Failed to obtain answer via API. B", ""),
        ("Cannot determine the answer", "Z"),
        (None, ""),  # the call failed
        ("", ""),
    ],
)
def test_a_judge_reply_is_read_with_can_infer(reply, opt):
    assert read_judge_reply(reply, options=LESIONS) == opt


def test_the_first_readable_reply_decides():
    verdict = judge_verdict(judge_replies=[None, "hmm", "B"], options=LESIONS, seed="1:2")
    assert verdict == JudgeVerdict(opt="B", letter="B", attempts=3, fallback=False)
    assert judge_verdict(judge_replies=["Z"], options=LESIONS, seed="s") == JudgeVerdict(
        "Z", "", 1, False
    )


def test_it_asks_again_until_three_attempts_failed():
    assert JUDGE_ATTEMPTS == 3
    assert judge_verdict(judge_replies=[], options=LESIONS, seed="s") is None
    assert judge_verdict(judge_replies=[None, "??"], options=LESIONS, seed="s") is None


def test_after_three_failed_attempts_a_seeded_letter_is_drawn_and_marked():
    failed = ["Failed to obtain answer via API.", None, "no idea"]
    verdicts = {
        seed: judge_verdict(judge_replies=failed, options=LESIONS, seed=seed)
        for seed in map(str, range(40))
    }
    assert all(v.fallback and v.attempts == 3 for v in verdicts.values())
    # Drawn from the options and Z, never from the empty option C; the same seed, the same draw.
    assert {v.opt for v in verdicts.values()} == {"A", "B", "D", "Z"}
    assert all(v.letter == ("" if v.opt == "Z" else v.opt) for v in verdicts.values())
    assert judge_verdict(judge_replies=failed, options=LESIONS, seed="7") == verdicts["7"]


def test_with_an_option_z_the_draw_is_among_the_options():
    options = {letter: f"finding {letter}" for letter in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
    drawn = {judge_fallback(options=options, seed=str(seed)) for seed in range(300)}
    assert drawn == set(options)
