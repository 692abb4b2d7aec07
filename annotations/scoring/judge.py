"""VLMEvalKit's judge step for multiple-choice replies its exact matching cannot read.

API note for the runs service (pure functions; the HTTP request is the caller's):

1. Ask the judge only when `read_reply(...).judge_applies` is true: VLMEvalKit's `can_infer`
   read nothing from the reply. A refusal phrase or the reply's own "Z" is already Z there and
   is never judged; MedQ-DEG has no judge step.
2. `build_judge_prompt(question=..., options=..., reply=...)` is the whole request: one user
   message, no system prompt, temperature 0 (VLMEvalKit's default judge is gpt-4o-mini).
3. After each attempt call `judge_verdict(judge_replies=[...], options=..., seed=...)` with all
   the judge's replies so far (None for a call that failed). It returns None while another
   attempt is due, else a `JudgeVerdict`. VLMEvalKit makes at most `JUDGE_ATTEMPTS` (3).
4. Store `verdict.letter` ("" for Z) as the judged letter, `verdict.opt == answer` as the
   judged hit, and `verdict.fallback`: when every attempt failed VLMEvalKit draws a random letter
   (options + Z) with an unseeded `random.choice`; we draw with `random.Random(seed)`, so the
   same seed (e.g. "run:item") always gives the same letter, and mark it as drawn.

The prompt and the reading follow `build_prompt`/`build_prompt_cn`, `build_option_str` and
`extract_answer_from_item` at `VLMEVAL_COMMIT`. One corner is not reproduced: VLMEvalKit lower-cases
its option dict in place while matching, which changes the short-reply limit of later attempts
only for option texts holding a character whose lower case is longer ("İ").
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from annotations.scoring.extract import API_FAILURE, NO_OPTION, can_infer, vlmeval_choices
from annotations.scoring.vlmeval import options_as_loaded, prediction_as_evaluated

JUDGE_ATTEMPTS = 3

# VLMEvalKit's judge prompts, word for word (typos included): the judge's answers depend on them.
# Placeholders: question, the option block, the reply.
_PROMPT_EN = (
    "You are an AI assistant who will help me to match "
    "an answer with several options of a single-choice question. "
    "You are provided with a question, several options, and an answer, "
    "and you need to find which option is most similar to the answer. "
    "If the meaning of all options are significantly different from the answer, output Z. "
    "Your should output a single uppercase character in A, B, C, D (if they are valid options), "
    "and Z. \n"
    "Example 1: \n"
    "Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n"
    "Answer: a cute teddy bear\nYour output: A\n"
    "Example 2: \n"
    "Question: What is the main object in image?\nOptions: A. teddy bear B. rabbit C. cat D. dog\n"
    "Answer: Spider\nYour output: Z\n"
    "Example 3: \n"
    "Question: {}?\nOptions: {}\nAnswer: {}\nYour output: "
)
_PROMPT_CN = (
    "你是一个帮助我匹配答案与单选题中多个选项的 AI 助手。"
    "你会被提供：一个问题，多个选项，一个答案。你的任务是找到与答案意义最相近的选项。"
    "如果所有选项的意义都与答案显著不同，则输出 Z。"
    "你应该输出一个单个的大写字母，例如 A, B, C, D（如果它们是有效选项），或 Z。"
    "例 1:"
    "问题: 图中最主要的物体是什么?\n选项: A. 泰迪熊 B. 兔子 C. 猫 D. 狗\n答案: 一只可爱的泰迪熊\n输出: A\n"
    "例 2: \n"
    "问题: 图中最主要的物体是什么?\n选项: A. 泰迪熊 B. 兔子 C. 猫 D. 狗\n答案: 蜘蛛\n输出: Z\n"
    "例 3: \n"
    "问题: {}?\n选项: {}\n答案: {}\n输出: "
)
# VLMEvalKit's `cn_string`: a CJK unified ideograph anywhere in the question.
_CHINESE = re.compile("[\u4e00-\u9fff]")


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge step's outcome: `opt` is VLMEvalKit's letter (an option or "Z"), `letter` the
    same with "" for Z, `attempts` how many judge calls it took, `fallback` whether every attempt
    failed and the letter was drawn (seeded) instead."""

    opt: str
    letter: str
    attempts: int
    fallback: bool


def build_judge_prompt(*, question: str, options: Mapping[str, str], reply: str) -> str:
    """The judge request for one reply, in English, or in Chinese for a Chinese question."""
    choices = vlmeval_choices(options_as_loaded(options))
    option_block = "There are several options: \n" + "".join(
        f"{letter}. {text}\n" for letter, text in choices.items()
    )
    template = _PROMPT_CN if _CHINESE.search(question) else _PROMPT_EN
    return template.format(question, option_block, prediction_as_evaluated(reply))


def read_judge_reply(judge_reply: str | None, *, options: Mapping[str, str]) -> str:
    """The letter one judge reply gives: an option letter, "Z", or "" for a failed attempt (the
    call failed, VLMEvalKit's API failure text, or nothing `can_infer` reads)."""
    if judge_reply is None or API_FAILURE in judge_reply:
        return ""
    return can_infer(judge_reply, options_as_loaded(options))


def judge_verdict(
    *, judge_replies: Sequence[str | None], options: Mapping[str, str], seed: str
) -> JudgeVerdict | None:
    """The verdict after the judge's replies so far, or None while another attempt is due."""
    for attempt, judge_reply in enumerate(judge_replies[:JUDGE_ATTEMPTS], start=1):
        opt = read_judge_reply(judge_reply, options=options)
        if opt:
            return JudgeVerdict(opt, "" if opt == NO_OPTION else opt, attempt, fallback=False)
    if len(judge_replies) < JUDGE_ATTEMPTS:
        return None
    opt = judge_fallback(options=options, seed=seed)
    return JudgeVerdict(opt, "" if opt == NO_OPTION else opt, JUDGE_ATTEMPTS, fallback=True)


def judge_fallback(*, options: Mapping[str, str], seed: str) -> str:
    """The letter drawn after failed attempts: one of the options or Z, seeded by `seed`.

    With an option Z itself VLMEvalKit draws from an empty list and fails; we draw among the
    options then.
    """
    letters = list(vlmeval_choices(options_as_loaded(options)))
    if NO_OPTION not in letters:
        letters.append(NO_OPTION)
    return random.Random(seed).choice(letters)
