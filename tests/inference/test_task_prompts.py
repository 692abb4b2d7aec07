"""Gastric-X task prompts, and each task's answer going through the real client and back to a score."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from annotations.inference import OpenAICompatibleProvider, build_messages
from annotations.inference.boxparse import parse_box
from annotations.inference.prompts import build_mcq_prompt
from annotations.inference.task_prompts import (
    TASKS,
    build_classification_prompt,
    build_localization_prompt,
    build_report_prompt,
    build_vqa_prompt,
    format_indicators,
    label_for_letter,
    label_options,
    letter_of,
    task_prompt_overview,
)
from annotations.scoring import extract_mcq
from annotations.scoring.boxes import iou
from annotations.scoring.text import rouge_l
from tests.support.fake_openai import FakeOpenAIServer, box_answers, replay, sha256_hex

STAGES = ["IA", "IB", "IIA", "IIB", "IIIA"]
INDICATORS = [
    {"name": "CEA", "value": 12.3, "unit": "ng/mL", "reference_range": [0, 5.0]},
    {"name": "CA19-9", "value": 20.0, "unit": "U/mL", "reference_range": None},
    {"name": "Hemoglobin", "value": 98, "unit": "", "reference_range": [115, 150]},
]


def png(shade: int, size: tuple[int, int] = (8, 8)) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", size, shade).save(buffer, format="PNG")
    return buffer.getvalue()


def test_vqa_is_vlmevalkits_multiple_choice_prompt():
    options = {"A": "0", "B": "1-2", "C": "3-6"}
    question = "How many perigastric lymph nodes are visible on CT?"

    assert build_vqa_prompt(question, options, hint="Venous phase") == build_mcq_prompt(
        question, options, "Venous phase"
    )


def test_classification_asks_the_label_set_as_lettered_options():
    prompt = build_classification_prompt("What is the TNM stage of this case?", STAGES[:3])

    assert prompt == (
        "Question: What is the TNM stage of this case?\n"
        "Options:\nA. IA\nB. IB\nC. IIA\n"
        "Please select the correct answer from the options above. \n"
    )
    assert label_options(STAGES) == {"A": "IA", "B": "IB", "C": "IIA", "D": "IIB", "E": "IIIA"}
    assert label_for_letter("C", STAGES) == "IIA"
    assert label_for_letter(" d ", STAGES) == "IIB"
    assert label_for_letter("Z", STAGES) is None
    assert label_for_letter(None, STAGES) is None
    assert label_for_letter("", STAGES) is None
    # The other way, as releases and the frequent-answer baseline letter a gold label.
    assert letter_of(label_options(STAGES), "IIB") == "D"
    assert letter_of(label_options(STAGES), "IV") == ""


def test_label_sets_that_cannot_be_options_are_refused():
    with pytest.raises(ValueError, match="empty"):
        label_options([])
    with pytest.raises(ValueError, match="at most 26"):
        label_options([f"L{n}" for n in range(27)])
    with pytest.raises(ValueError, match="repeats"):
        label_options(["T1", "T1"])


def test_it_writes_indicators_with_units_and_reference_ranges():
    assert format_indicators(INDICATORS) == (
        "- CEA: 12.3 ng/mL (reference range 0-5 ng/mL)\n"
        "- CA19-9: 20 U/mL\n"
        "- Hemoglobin: 98 (reference range 115-150)"
    )


def test_the_diagnostic_report_prompt_lists_every_image_and_the_indicators():
    prompt = build_report_prompt(
        "diagnostic",
        image_labels=["CT, venous phase, axial slice 45 of 120", "endoscopy image"],
        indicators=INDICATORS[:1],
        language="zh",
    )

    assert prompt == (
        "You are given a gastric cancer patient's case, with its biochemical indicators.\n"
        "Images:\n"
        "Image 1: CT, venous phase, axial slice 45 of 120\n"
        "Image 2: endoscopy image\n"
        "Biochemical indicators:\n"
        "- CEA: 12.3 ng/mL (reference range 0-5 ng/mL)\n"
        "Write the diagnostic report of this case: the findings from all of the case's data, "
        "then the diagnostic impression. Answer with the report text only.\n"
        "Write the report in Simplified Chinese."
    )


def test_ct_and_endoscopy_report_prompts_keep_to_their_images():
    ct = build_report_prompt("ct", image_labels=["CT, arterial phase"], indicators=INDICATORS)
    endoscopy = build_report_prompt("endoscopy", image_labels=["endoscopy image"], language="en")

    assert ct.startswith("You are given a gastric cancer patient's abdominal CT images.\n")
    assert "Write the CT report" in ct
    assert "indicators" not in ct and "Write the report in" not in ct
    assert endoscopy.startswith("You are given a gastric cancer patient's endoscopy image.\n")
    assert endoscopy.endswith("\nWrite the report in English.")


def test_report_prompts_refuse_what_they_cannot_ask():
    with pytest.raises(ValueError, match="report kind"):
        build_report_prompt("pathology", image_labels=["x"])
    with pytest.raises(ValueError, match="at least one image"):
        build_report_prompt("ct", image_labels=[])
    with pytest.raises(ValueError, match="language"):
        build_report_prompt("ct", image_labels=["x"], language="fr")


def test_the_localization_prompt_asks_for_pixel_corners_on_the_image_sent():
    prompt = build_localization_prompt(
        "lymph_node", image_label="CT, venous phase, axial slice 45 of 120", width=512, height=384
    )

    assert prompt == (
        "The image is CT, venous phase, axial slice 45 of 120, 512 x 384 pixels.\n"
        "Locate the perigastric lymph node in this image. Answer with one bounding box "
        "[x0, y0, x1, y1] in pixel coordinates of this image: (x0, y0) is its top-left corner "
        "and (x1, y1) its bottom-right corner, x counted from the left edge and y from the top "
        "edge.\n"
        'If the image shows no perigastric lymph node, answer "none".'
    )
    assert "Locate the gastric fold in" in build_localization_prompt(
        "gastric_fold", image_label="x", width=1, height=1
    )
    with pytest.raises(ValueError):
        build_localization_prompt("tumor", image_label="x", width=0, height=10)


def test_the_overview_shows_each_prompted_task_with_placeholders():
    overview = task_prompt_overview()

    assert list(overview) == [task for task in TASKS if task != "retrieval"]
    assert "{question}" in overview["vqa"] and "{option D}" in overview["vqa"]
    assert "{image 2}" in overview["report_generation"]
    assert "{width} x {height}" in overview["localization"]


def test_a_classification_answer_comes_back_as_its_label():
    with FakeOpenAIServer(replay(default="The answer is D.")) as server:
        provider = OpenAICompatibleProvider(server.base_url, "vlm", max_retries=0)
        prompt = build_classification_prompt("What is the TNM stage?", STAGES)
        reply = provider.complete(build_messages(prompt, [png(30)])).text

    assert label_for_letter(extract_mcq(reply, label_options(STAGES)), STAGES) == "IIB"


def test_generated_reports_come_back_per_image_and_are_scored():
    endoscopy_a, endoscopy_b = png(40), png(160)
    references = {
        endoscopy_a: "ulcerative lesion on the lesser curvature of the gastric body",
        endoscopy_b: "normal gastric mucosa",
    }
    script = replay(
        by_image={
            sha256_hex(endoscopy_a): "ulcerative lesion on the lesser curvature",
            sha256_hex(endoscopy_b): "normal gastric mucosa",
        }
    )
    prompt = build_report_prompt("endoscopy", image_labels=["endoscopy image"])
    with FakeOpenAIServer(script) as server:
        provider = OpenAICompatibleProvider(server.base_url, "vlm", max_retries=0)
        generated = {
            image: provider.complete(build_messages(prompt, [image])).text for image in references
        }

    # 6 of 10 reference tokens, all 6 generated ones: P 1, R 6/10, F1 = 12/16
    assert rouge_l(generated[endoscopy_a], references[endoscopy_a]) == pytest.approx(12 / 16)
    assert rouge_l(generated[endoscopy_b], references[endoscopy_b]) == 1.0


def test_box_answers_come_back_parsed_to_the_boxes_drawn():
    slices = {
        png(shade, (64, 48)): (10 + shade % 7, 8, 40, 30 + shade % 5) for shade in range(0, 240, 20)
    }
    script = box_answers({sha256_hex(image): box for image, box in slices.items()})
    with FakeOpenAIServer(script) as server:
        provider = OpenAICompatibleProvider(server.base_url, "vlm", max_retries=0)
        for image, drawn in slices.items():
            prompt = build_localization_prompt("tumor", image_label="CT slice", width=64, height=48)
            reply = provider.complete(build_messages(prompt, [image])).text
            parsed = parse_box(reply, width=64, height=48)
            assert parsed is not None, reply
            assert iou(parsed.box, drawn) == pytest.approx(1.0)
