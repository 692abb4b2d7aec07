"""Synthetic EndoBench TSV: endoscopy-like frames with questions their content answers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from annotations.formats.vlmeval import write_mcq_tsv
from annotations.imaging.synth import (
    SynthFrame,
    draw_visual_prompt,
    encode_jpeg,
    endoscopy_scene,
)
from demo.content import DATASETS, SCENES, Question, questions_for_frame

ENDOBENCH_COLUMNS = [
    "index",
    "image",
    "image_path",
    "question",
    "category",
    "task",
    "subtask",
    "scene",
    "answer",
    "dataset",
    "gt",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
]
OPTION_LETTERS = "ABCDEF"
FRAME_SIZE = (448, 448)
# Findings cycled per scene; capsule endoscopy is where small-bowel bleeding is looked for.
_FINDINGS_BY_SCENE = {
    "gastroscopy": ("ulcer", "normal", "polyp", "bleeding"),
    "colonoscopy": ("polyp", "normal", "polyp", "bleeding", "ulcer"),
    "capsule endoscopy": ("bleeding", "normal", "ulcer", "polyp"),
    "surgery": ("normal",),
}
_ENDOBENCH_FAMILY = 1


def write_endobench_tsv(path: Path, *, seed: int, n_items: int) -> Path:
    """Write an EndoBench-format TSV of `n_items` questions to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        write_mcq_tsv(out, ENDOBENCH_COLUMNS, endobench_rows(seed=seed, n_items=n_items))
    return path


def endobench_rows(*, seed: int, n_items: int) -> Iterator[dict[str, object]]:
    """Yield EndoBench rows; questions on one frame share its image by index reuse."""
    index = 0
    frame_number = 0
    usage: Counter[str] = Counter()
    while index < n_items:
        rng = np.random.default_rng([seed, _ENDOBENCH_FAMILY, frame_number])
        frame = _frame(rng, frame_number)
        dataset = str(rng.choice(DATASETS[frame.scene]))
        image_path = (
            f"EndoBench-Images/{dataset}/{frame.scene.replace(' ', '_')}_{frame_number:05d}"
        )
        questions = _pick_questions(rng, questions_for_frame(rng, frame), usage)
        plain_jpeg = encode_jpeg(frame.pixels, quality=90)
        owner_index: int | None = None
        for question in questions:
            if index >= n_items:
                return
            if question.prompt is not None:
                image: object = _prompted_jpeg(frame, question)
                path = f"{image_path}_vp.jpg"
            elif owner_index is None:
                image, owner_index, path = plain_jpeg, index, f"{image_path}.jpg"
            else:
                image, path = owner_index, f"{image_path}.jpg"
            yield _row(index, image, path, question, frame.scene, dataset)
            index += 1
        frame_number += 1


def _frame(rng: np.random.Generator, frame_number: int) -> SynthFrame:
    scene = SCENES[frame_number % len(SCENES)]
    findings = _FINDINGS_BY_SCENE[scene]
    finding = findings[(frame_number // len(SCENES)) % len(findings)]
    return endoscopy_scene(rng, FRAME_SIZE, scene=scene, finding=finding)


def _pick_questions(
    rng: np.random.Generator, questions: list[Question], usage: Counter[str]
) -> list[Question]:
    # Prefer the tasks asked least so far, so even a small demo covers the whole taxonomy.
    ranked = sorted(questions, key=lambda q: (usage[q.task], rng.random()))
    chosen = ranked[: int(rng.integers(1, 4))]
    usage.update(q.task for q in chosen)
    # The question that owns the shared image must come first; prompted ones draw their own.
    return sorted(chosen, key=lambda q: q.prompt is not None)


def _prompted_jpeg(frame: SynthFrame, question: Question) -> bytes:
    assert question.prompt is not None
    kind, bbox = question.prompt
    margin = 6
    padded = [bbox[0] - margin, bbox[1] - margin, bbox[2] + margin, bbox[3] + margin]
    pixels = draw_visual_prompt(frame.pixels, kind, padded, (0, 255, 0))
    return encode_jpeg(pixels, quality=90)


def _row(
    index: int, image: object, image_path: str, question: Question, scene: str, dataset: str
) -> dict[str, object]:
    row: dict[str, object] = {
        "index": index,
        "image": image,
        "image_path": image_path,
        "question": question.question,
        "category": question.category,
        "task": question.task,
        "subtask": question.subtask,
        "scene": scene,
        "answer": question.answer_letter,
        "dataset": dataset,
        "gt": question.answer_text,
    }
    for position, letter in enumerate(OPTION_LETTERS):
        row[letter] = question.options[position] if position < len(question.options) else ""
    return row
