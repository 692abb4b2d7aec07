"""Prompts for Gastric-X's five tasks; send them with `prompts.build_messages(prompt, images)`.

API:
- `build_vqa_prompt(question, options, hint="") -> str`: VLMEvalKit's multiple-choice prompt,
  exactly `prompts.build_mcq_prompt` (answers are read with `scoring.extract_mcq`).
- `label_options(labels) -> {letter: label}` and `build_classification_prompt(question, labels,
  hint="") -> str`: a class from a fixed label set (TNM stage, T/N/M) asked as multiple choice,
  the labels lettered A, B, ... in the order of the set; `label_for_letter(letter, labels)` maps
  the extracted letter back to its label (None for no or an unknown letter).
- `build_report_prompt(kind, *, image_labels, indicators=(), language=None) -> str`: free-text
  report generation. `kind` is "diagnostic" (all images and the indicators), "ct" (the CT
  images) or "endoscopy" (the endoscopy image). `image_labels` name the images in the order they
  are sent (e.g. "CT, venous phase, axial slice 45 of 120"); `indicators` are case.json's
  `{"name", "value", "unit", "reference_range"}`; `language` "en" or "zh" asks for the reference
  reports' language (ROUGE/BLEU compare words, so the languages must match).
- `report_question(kind, *, question, image_labels, indicators=(), language=None) -> str`: the
  whole text a report item is asked with (its own question, if the prompt does not hold it
  already, above `build_report_prompt`): what runs send and what NAME_report.tsv's question
  cell holds, built from the same fields in both places. `ct_slice_label(phase, z, size_z)`,
  `ENDOSCOPY_LABEL` and `item_image_label(n)` name the images; `indicator_entry(...)` is one
  indicator as `format_indicators` takes it.
- `box_slices(z0, z1, size_z)`: the CT slices a 3D target is asked on.
- `build_localization_prompt(target, *, image_label, width, height) -> str`: one box
  `[x0, y0, x1, y1]` in pixels of the one image sent (a CT slice or the endoscopy image); read
  the answer with `inference.boxparse.parse_box(reply, width=width, height=height)`. For a 3D
  box, ask slice by slice and join the answers with `scoring.boxes.box3d_from_slice_boxes`.
- `task_prompt_overview(language=None) -> {task: prompt}`: the prompt of each task but
  retrieval, with placeholders in braces, to show on the run page. Retrieval has no prompt:
  report texts and case images go to the embeddings endpoint as they are
  (`inference.embeddings`).
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping, Sequence
from typing import Any

from annotations.inference.prompts import build_mcq_prompt

__all__ = [
    "BOX_SLICES",
    "BOX_TARGETS",
    "REPORT_KINDS",
    "TASKS",
    "box_slices",
    "build_classification_prompt",
    "build_localization_prompt",
    "build_report_prompt",
    "build_vqa_prompt",
    "ct_slice_label",
    "format_indicators",
    "indicator_entry",
    "item_image_label",
    "report_question",
    "label_for_letter",
    "label_options",
    "task_prompt_overview",
]

TASKS = ("vqa", "classification", "report_generation", "localization", "retrieval")
REPORT_KINDS: dict[str, tuple[str, str]] = {
    # kind: (what the model is given, what it writes)
    "diagnostic": (
        "a gastric cancer patient's case",
        "the diagnostic report of this case: the findings from all of the case's data, "
        "then the diagnostic impression",
    ),
    "ct": (
        "a gastric cancer patient's abdominal CT images",
        "the CT report: the findings (stomach wall, lesion, perigastric lymph nodes, "
        "other organs) and the impression",
    ),
    "endoscopy": (
        "a gastric cancer patient's endoscopy image",
        "the endoscopy report: the findings (location, size, appearance of any lesion) and "
        "the impression",
    ),
}
ENDOSCOPY_LABEL = "endoscopy image"
# How the one image of a 2D localization item is named: the case's, or the item's own.
BOX_IMAGE_LABELS = {True: "an endoscopy image", False: "the image"}
BOX_TARGETS = {"tumor": "tumor", "lymph_node": "perigastric lymph node", "stomach": "stomach"}
_LANGUAGES = {"en": "English", "zh": "Simplified Chinese"}


def build_vqa_prompt(question: str, options: Mapping[str, Any], hint: str = "") -> str:
    """VLMEvalKit's generic multiple-choice prompt (see `prompts.build_mcq_prompt`)."""
    return build_mcq_prompt(question, options, hint)


def label_options(labels: Sequence[str]) -> dict[str, str]:
    """The label set as lettered options A, B, ... in its own order."""
    if not labels:
        raise ValueError("the label set is empty")
    if len(labels) > len(string.ascii_uppercase):
        raise ValueError(f"at most 26 labels can be asked as options, got {len(labels)}")
    if len(set(labels)) != len(labels):
        raise ValueError("the label set repeats a label")
    return dict(zip(string.ascii_uppercase, labels, strict=False))


def letter_of(options: Mapping[str, str], label: str) -> str:
    """The letter `label` is asked with among lettered options (`label_options`); '' if none."""
    return next((letter for letter, text in options.items() if text == label), "")


def label_for_letter(letter: str | None, labels: Sequence[str]) -> str | None:
    """The label an extracted option letter stands for; None for no or an unknown letter."""
    if not letter:
        return None
    return label_options(labels).get(letter.strip().upper())


def build_classification_prompt(question: str, labels: Sequence[str], hint: str = "") -> str:
    """`question` with the label set as options, VLMEvalKit's multiple-choice layout."""
    return build_mcq_prompt(question, label_options(labels), hint)


def _number_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def format_indicators(indicators: Sequence[Mapping[str, Any]]) -> str:
    """One line per indicator: `- CEA: 12.3 ng/mL (reference range 0-5 ng/mL)`."""
    lines = []
    for indicator in indicators:
        unit = f" {indicator['unit']}" if indicator.get("unit") else ""
        line = f"- {indicator['name']}: {_number_text(indicator.get('value'))}{unit}"
        reference = indicator.get("reference_range")
        if reference and len(reference) == 2:
            low, high = (_number_text(bound) for bound in reference)
            line += f" (reference range {low}-{high}{unit})"
        lines.append(line)
    return "\n".join(lines)


def _language_line(language: str | None) -> str:
    if language is None:
        return ""
    if language not in _LANGUAGES:
        raise ValueError(f"language must be one of {sorted(_LANGUAGES)}, got {language!r}")
    return f"\nWrite the report in {_LANGUAGES[language]}."


def build_report_prompt(
    kind: str,
    *,
    image_labels: Sequence[str],
    indicators: Sequence[Mapping[str, Any]] = (),
    language: str | None = None,
) -> str:
    """The report-generation prompt of one report kind; see the module docstring."""
    if kind not in REPORT_KINDS:
        raise ValueError(f"report kind must be one of {sorted(REPORT_KINDS)}, got {kind!r}")
    if not image_labels:
        raise ValueError("a report is written from at least one image")
    given, task = REPORT_KINDS[kind]
    with_indicators = kind == "diagnostic" and bool(indicators)
    if with_indicators:
        given += ", with its biochemical indicators"
    images = "\n".join(f"Image {n}: {label}" for n, label in enumerate(image_labels, start=1))
    prompt = f"You are given {given}.\nImages:\n{images}\n"
    if with_indicators:
        prompt += f"Biochemical indicators:\n{format_indicators(indicators)}\n"
    prompt += f"Write {task}. Answer with the report text only."
    return prompt + _language_line(language)


def report_question(
    kind: str,
    *,
    question: str,
    image_labels: Sequence[str],
    indicators: Sequence[Mapping[str, Any]] = (),
    language: str | None = None,
) -> str:
    """The whole text a report item is asked with: `question` (the item's own, unless the
    prompt already holds it) above the report prompt of `kind`. Runs send it; a release's
    NAME_report.tsv holds it as the question cell, so VLMEvalKit asks the same."""
    prompt = build_report_prompt(
        kind,
        image_labels=image_labels,
        indicators=indicators if kind == "diagnostic" else (),
        language=language,
    )
    if question and question not in prompt:
        prompt = f"{question}\n{prompt}"
    return prompt


def ct_slice_label(phase: str, z: int, size_z: int) -> str:
    """How an axial CT slice is named to the model (z counted from 0, shown from 1)."""
    return f"CT, {phase.replace('_', '-')} phase, axial slice {z + 1} of {size_z}"


def item_image_label(number: int) -> str:
    """An item's own image (no case), numbered from 1."""
    return f"image {number}"


def indicator_entry(
    *,
    name: str,
    value: float | None,
    value_text: str,
    unit: str,
    reference_low: float | None,
    reference_high: float | None,
) -> dict[str, Any]:
    """One stored indicator as `format_indicators` reads it (a text value where no number)."""
    both = reference_low is not None and reference_high is not None
    return {
        "name": name,
        "value": value if value is not None else value_text,
        "unit": unit,
        "reference_range": [reference_low, reference_high] if both else None,
    }


# A 3D target is asked on at most this many slices inside it, plus one slice beyond each end
# (so that the joined box's extent in z is the model's, not ours).
BOX_SLICES = 3


def box_slices(
    z0: int, z1: int, size_z: int
) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """Slices asked for a target spanning `[z0, z1)`: up to BOX_SLICES evenly inside, one
    stride beyond each end; with the run of slices each one stands for. A release lists the
    slices of each 3D target (NAME_localization.json), its COCO figures are over them."""
    stride = max(1, math.ceil((z1 - z0) / BOX_SLICES))
    half = stride // 2
    inside = math.ceil((z1 - z0) / stride)
    slices, spans = [], []
    for k in range(-1, inside + 1):
        start = z0 + k * stride
        z = start + half
        if 0 <= z < size_z:
            slices.append(z)
            spans.append((max(0, start), min(size_z, start + stride)))
    return tuple(slices), tuple(spans)


def build_localization_prompt(target: str, *, image_label: str, width: int, height: int) -> str:
    """Ask for one `[x0, y0, x1, y1]` box of `target` (a box label or free text) in pixels."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width} x {height}")
    return _localization_text(target, image_label, f"{width} x {height}")


def _localization_text(target: str, image_label: str, size: str) -> str:
    name = BOX_TARGETS.get(target, target.replace("_", " "))
    return (
        f"The image is {image_label}, {size} pixels.\n"
        f"Locate the {name} in this image. Answer with one bounding box [x0, y0, x1, y1] in "
        "pixel coordinates of this image: (x0, y0) is its top-left corner and (x1, y1) its "
        "bottom-right corner, x counted from the left edge and y from the top edge.\n"
        f'If the image shows no {name}, answer "none".'
    )


def task_prompt_overview(language: str | None = None) -> dict[str, str]:
    """Every prompted task's prompt with placeholders in braces, for the run page."""
    options = {letter: f"{{option {letter}}}" for letter in "ABCD"}
    return {
        "vqa": build_vqa_prompt("{question}", options),
        "classification": build_mcq_prompt("{question}", {"A": "{label 1}", "B": "{label 2}"}),
        "report_generation": build_report_prompt(
            "diagnostic",
            image_labels=["{image 1}", "{image 2}"],
            indicators=[{"name": "{indicator}", "value": "{value}", "unit": "{unit}"}],
            language=language,
        ),
        "localization": _localization_text("{target}", "{image}", "{width} x {height}"),
    }
