from __future__ import annotations

import base64
import io
import math

import pytest
from PIL import Image

from annotations.inference.prompts import (
    build_mcq_prompt,
    build_medqdeg_prompt,
    build_messages,
    render_template,
    sniff_image_mime,
)


def encoded_image(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 3), (200, 30, 40)).save(buffer, format=fmt)
    return buffer.getvalue()


OPTIONS = {"A": "Polyp", "B": "Ulcer", "C": "Normal mucosa", "D": "Bleeding"}


def test_it_builds_the_vlmevalkit_generic_prompt_exactly():
    prompt = build_mcq_prompt("What is shown?", OPTIONS)

    assert prompt == (
        "Question: What is shown?\n"
        "Options:\n"
        "A. Polyp\n"
        "B. Ulcer\n"
        "C. Normal mucosa\n"
        "D. Bleeding\n"
        "Please select the correct answer from the options above. \n"
    )


def test_it_puts_the_hint_first_when_there_is_one():
    prompt = build_mcq_prompt("Which phase?", {"A": "Arterial", "B": "Venous"}, hint="CT, 4 phases")

    assert prompt == (
        "Hint: CT, 4 phases\n"
        "Question: Which phase?\n"
        "Options:\n"
        "A. Arterial\n"
        "B. Venous\n"
        "Please select the correct answer from the options above. \n"
    )


def test_it_skips_empty_none_and_nan_options_and_keeps_letter_order():
    options = {
        "C": "Third",
        "A": "First",
        "E": "",
        "B": "Second",
        "D": None,
        "F": math.nan,
        "G": "  ",
    }

    prompt = build_mcq_prompt("Q?", options)

    assert prompt == (
        "Question: Q?\nOptions:\nA. First\nB. Second\nC. Third\n"
        "Please select the correct answer from the options above. \n"
    )


def test_it_leaves_out_the_options_block_when_no_option_has_text():
    assert build_mcq_prompt("Describe the lesion.", {"A": "", "B": None}) == (
        "Question: Describe the lesion.\n"
    )


def test_it_builds_the_medqdeg_prompt_exactly():
    options = {"A": " CT ", "B": "MRI", "C": "", "D": "X-ray", "F": "ignored by MedQ-DEG"}

    prompt = build_medqdeg_prompt("Which modality is this?", options)

    assert prompt == (
        "Which modality is this?\n\n"
        "A. CT\nB. MRI\nD. X-ray\n\n"
        "Answer with the option letter from the given choices directly."
    )


def test_it_renders_a_custom_template_with_all_placeholders():
    template = "{hint}\n{question}\n{options}\nAnswer {{letter only}}."

    text = render_template(
        template, "Where is the polyp?", {"A": "Left", "B": "Right", "C": ""}, "Colon"
    )

    assert text == "Colon\nWhere is the polyp?\nA. Left\nB. Right\nAnswer {letter only}."


@pytest.mark.parametrize(
    "template",
    [
        "{question} {answer}",
        "{}",
        "{0}",
        "{question.__class__}",
        "{options[0]}",
        "{question!r}",
        "{hint:>9}",
    ],
)
def test_it_rejects_template_placeholders_other_than_the_three_fields(template):
    with pytest.raises(ValueError, match="placeholder"):
        render_template(template, "q", {"A": "a"}, "")


def test_it_names_the_unknown_placeholder_in_the_error():
    with pytest.raises(
        ValueError, match=r"\{answer\}.*allowed: \{hint\}, \{options\}, \{question\}"
    ):
        render_template("{question} {answer}", "q", {"A": "a"}, "")


def test_it_rejects_a_template_with_an_unbalanced_brace():
    with pytest.raises(ValueError, match="malformed"):
        render_template("{question", "q", {"A": "a"}, "")


def test_it_sends_text_only_when_there_is_no_image():
    assert build_messages("Q?", []) == [{"role": "user", "content": "Q?"}]


def test_it_puts_one_jpeg_before_the_text_as_a_data_url():
    jpeg = encoded_image("JPEG")

    [message] = build_messages("Q?", [jpeg])

    assert message["role"] == "user"
    image_part, text_part = message["content"]
    assert image_part["type"] == "image_url"
    prefix, payload = image_part["image_url"]["url"].split(",", 1)
    assert prefix == "data:image/jpeg;base64"
    assert base64.b64decode(payload) == jpeg
    assert text_part == {"type": "text", "text": "Q?"}


def test_it_keeps_the_order_and_mime_of_two_images():
    jpeg, png = encoded_image("JPEG"), encoded_image("PNG")

    [message] = build_messages("Compare.", [png, jpeg])

    urls = [part["image_url"]["url"] for part in message["content"][:2]]
    assert urls[0].startswith("data:image/png;base64,")
    assert urls[1].startswith("data:image/jpeg;base64,")
    assert base64.b64decode(urls[0].split(",", 1)[1]) == png
    assert message["content"][2] == {"type": "text", "text": "Compare."}


def test_it_can_put_the_text_before_the_images():
    [message] = build_messages("Q?", [encoded_image("PNG")], image_first=False)

    assert [part["type"] for part in message["content"]] == ["text", "image_url"]


def test_it_drops_the_images_when_asked_to_answer_without_them():
    assert build_messages("Q?", [encoded_image("JPEG")], with_image=False) == [
        {"role": "user", "content": "Q?"}
    ]


@pytest.mark.parametrize(
    ("fmt", "mime"),
    [("JPEG", "image/jpeg"), ("PNG", "image/png"), ("GIF", "image/gif"), ("WEBP", "image/webp")],
)
def test_it_sniffs_the_image_mime_from_its_bytes(fmt, mime):
    assert sniff_image_mime(encoded_image(fmt)) == mime


def test_it_labels_unknown_bytes_as_octet_stream():
    assert sniff_image_mime(b"not an image at all") == "application/octet-stream"
