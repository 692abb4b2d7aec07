"""Each triage reason has one sentence, translated and filled from its evidence."""

from __future__ import annotations

from django.utils import translation

from annotations.scoring.triage import ALL_CODES
from annotations.views.triage import REASON_TEXTS, _explain

CONSENSUS = {"agree": 4, "runs": 5, "consensus": "B", "gold": "A", "probability": 0.873}


def test_every_reason_code_has_a_sentence():
    assert set(ALL_CODES) <= set(REASON_TEXTS)


def test_the_sentence_is_filled_from_the_evidence():
    text = _explain("model_consensus", CONSENSUS)

    assert text.startswith("4 of 5 models answer B, not the gold A.")
    assert text.endswith("wrong with probability 87%.")


def test_the_sentence_is_in_the_readers_language():
    with translation.override("zh-hans"):
        text = _explain("answerable_without_image", {})

    assert text == "所有不带图像的运行都答对了此题。"


def test_a_second_sentence_follows_when_the_evidence_asks_for_it():
    task = {"flagged": True, "task": "Counting", "accuracy": 0.81, "chance": 0.25}

    alone = _explain("answerable_without_image", {"task": {"flagged": False}})
    with_task = _explain("answerable_without_image", {"task": task})

    assert alone == "Every run made without the image answers it correctly."
    assert with_task == alone + (
        " Its task “Counting” is answered 81% of the time without images (chance 25%): "
        "the task may not test vision."
    )


def test_shaped_evidence_lists_the_options():
    options = [{"letter": "C", "text": "N/A"}, {"letter": "D", "text": ""}]

    text = _explain("empty_option", {"options": options})

    assert "(C = “N/A”, D = “”)" in text


def test_an_unknown_code_has_no_sentence():
    assert _explain("no_such_reason", {"x": 1}) == ""
