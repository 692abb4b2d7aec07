"""One model reply, read as VLMEvalKit scores it and, beside that, by our lenient rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from annotations.scoring.extract import (
    MEDQDEG_LETTERS,
    NO_OPTION,
    can_infer,
    medqdeg_hit,
    medqdeg_value,
    vlmeval_choices,
)
from annotations.scoring.lenient import extract_lenient
from annotations.scoring.vlmeval import (
    options_as_loaded,
    prediction_as_evaluated,
    reply_as_evaluated,
)

FAMILIES = ("vlmeval", "endobench", "medqdeg", "gastricx")


@dataclass(frozen=True)
class Reading:
    """What a reply scores.

    `letter`/`hit` are VLMEvalKit's (exact matching, no judge): `letter` is "" where VLMEvalKit
    has Z, or (MedQ-DEG) no letter A–E. `lenient_letter`/`lenient_hit` are VLMEvalKit's letter
    when it has one, else our extra readings (`annotations.scoring.lenient`).
    `judge_applies`: VLMEvalKit's exact matching read nothing at all, so with a judge model it
    would ask the judge (`annotations.scoring.judge`). A refusal phrase or the reply's own "Z"
    is already VLMEvalKit's answer Z: `letter` is "" but no judge is asked. Never for MedQ-DEG,
    whose evaluator has no judge step.
    """

    letter: str
    hit: bool
    lenient_letter: str
    lenient_hit: bool
    judge_applies: bool = False


def read_reply(*, family: str, reply: str, options: Mapping[str, str], answer: str) -> Reading:
    """Score `reply` to an item with `options` (letter -> text) and gold letter `answer`.

    The reply is first taken through VLMEvalKit's own prediction file (`reply_as_evaluated`: a
    reply spelled "None" or "N/A" is a missing value there, a CR becomes "_x000D_"), and the
    options through its TSV loading (a cell pandas reads as NaN is no option). MedQ-DEG uses its
    own extractor and hit rule; every other family VLMEvalKit's generic multiple-choice rules.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}, expected one of {FAMILIES}")
    loaded = options_as_loaded(options)
    judge_applies = False
    if family == "medqdeg":
        evaluated = reply_as_evaluated(reply)
        value = None if evaluated is None else medqdeg_value(evaluated)
        letter = value if value is not None and len(value) == 1 and value in MEDQDEG_LETTERS else ""
        hit = medqdeg_hit(value, answer)
        letters = [letter for letter in vlmeval_choices(loaded) if letter in MEDQDEG_LETTERS]
    else:
        letters = list(vlmeval_choices(loaded))
        opt = can_infer(prediction_as_evaluated(reply), loaded)
        judge_applies = not opt
        opt = opt or NO_OPTION
        letter = "" if opt == NO_OPTION and NO_OPTION not in letters else opt
        hit = opt == answer
    lenient = letter or extract_lenient(reply, letters)
    return Reading(
        letter=letter,
        hit=hit,
        lenient_letter=lenient,
        lenient_hit=hit or (bool(lenient) and lenient == answer),
        judge_applies=judge_applies,
    )
