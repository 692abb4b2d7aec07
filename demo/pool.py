"""A synthetic candidate pool in EndoBench's JSON layout (the JSON beside `EndoBench-Images/`).

EndoBench was drawn from 446,535 generated candidates; the demo's pool is a few thousand, made
the same way: every question a frame's content answers, each asked in several wordings and
option orders (the exact and near-duplicate questions a draw must take only once per image),
with the correct answer at A more often than not (the bias a balanced draw removes).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from annotations.imaging.synth import encode_jpeg, endoscopy_scene
from demo.content import DATASETS, SCENES, Question, questions_for_frame
from demo.endobench import _FINDINGS_BY_SCENE

POOL_FRAME_SIZE = (224, 224)
_POOL_FAMILY = 5
# The generator's wordings of one question: near-identical (a draw takes one per image).
_WORDINGS = ("{q}", "Q: {q}", "{the}")


def write_endobench_pool(folder: Path, *, seed: int, frames: int = 96) -> Path:
    """Write `folder/pool.json` and its frames; returns the JSON's path."""
    images = folder / "EndoBench-Images"
    images.mkdir(parents=True, exist_ok=True)
    items = []
    for number in range(frames):
        rng = np.random.default_rng([seed, _POOL_FAMILY, number])
        scene = SCENES[number % len(SCENES)]
        findings = _FINDINGS_BY_SCENE[scene]
        finding = findings[(number // len(SCENES)) % len(findings)]
        frame = endoscopy_scene(rng, POOL_FRAME_SIZE, scene=scene, finding=finding)
        dataset = str(rng.choice(DATASETS[scene]))
        name = f"{dataset}/{scene.replace(' ', '_')}_{number:05d}.jpg"
        (images / name).parent.mkdir(parents=True, exist_ok=True)
        (images / name).write_bytes(encode_jpeg(frame.pixels, quality=85))
        for question in questions_for_frame(rng, frame):
            if question.prompt is not None:
                continue  # a visual prompt needs a marked copy of the frame: not in the pool
            for wording in _WORDINGS:
                for order in _orders(rng, question):
                    items.append(
                        _item(len(items) + 1, question, wording, order, scene, dataset, name)
                    )
    path = folder / "pool.json"
    path.write_text(json.dumps(items, indent=1), encoding="utf-8")
    return path


def _orders(rng: np.random.Generator, question: Question) -> list[list[int]]:
    """Two option orders: one with the answer first (the generator's habit), one shuffled."""
    count = len(question.options)
    first = [question.answer_index, *(i for i in range(count) if i != question.answer_index)]
    return [first, [int(i) for i in rng.permutation(count)]]


def _item(
    number: int,
    question: Question,
    wording: str,
    order: list[int],
    scene: str,
    dataset: str,
    image_path: str,
) -> dict[str, object]:
    options = [question.options[i] for i in order]
    return {
        "id": number,
        "question": wording.format(
            q=question.question, the=question.question.replace(" this ", " the ", 1)
        ),
        "options": options,
        "answer": "ABCDEF"[order.index(question.answer_index)],
        "gt": question.options[question.answer_index],
        "category": question.category,
        "task": question.task,
        "subtask": question.subtask,
        "scene": scene,
        "dataset": dataset,
        "image_path": image_path,
    }
