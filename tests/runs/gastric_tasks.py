"""A small Gastric-X benchmark with an item of every kind, and a fake model that answers it.

Until the Gastric-X import makes items of every kind, the items are built here the way it
stores them: a classification item's `target` names its label field, a box item's `target`
holds its phase and voxel box (or its box on the endoscopy image), open and retrieval items
keep their report in `reference`. Every answer of the fake model is fixed, so the scores can be
computed by hand (see tests/runs/test_run_tasks.py).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

from annotations.imaging.volume import write_voxel_cache
from annotations.imaging.window import render_slice_png
from annotations.models import Benchmark, Case, Indicator, Item, Volume
from annotations.services.images import image_store
from annotations.services.runs.tasks import CT_WINDOW
from tests.factories import jpeg_bytes, make_benchmark, make_item
from tests.support.fake_openai import (
    Reply,
    embedding_inputs,
    image_digests,
    prompt_text,
)

T_LABELS = ["T1", "T2", "T3", "T4"]
# Classification: (true label, the letter the model answers).
CLASSIFICATION = [("T1", "A"), ("T2", "C"), ("T3", "C"), ("T4", "D")]
REPORTS = [
    (
        "The gastric wall is thickened at the antrum with a 3 cm ulcerated mass.",
        "The gastric wall at the antrum is thickened with an ulcerated mass of 3 cm.",
    ),
    (
        "No enlarged perigastric lymph nodes. The liver is normal.",
        "Several enlarged perigastric lymph nodes are seen.",
    ),
]
ENDOSCOPY_SIZE = (32, 24)
ENDOSCOPY_TRUTH = [4, 4, 20, 16]
ENDOSCOPY_ANSWER = "[4, 4, 10, 16]"  # IoU 6 * 12 / (16 * 12) = 0.375
VOLUME_SHAPE = (9, 40, 48)  # z, y, x
VOXEL_TRUTH = [10, 10, 2, 30, 30, 5]
# Slices asked for z 2..4 (inside) and 1, 5 (one beyond each end); the model's answer on each.
SLICE_ANSWERS = {
    1: "none",
    2: "[10, 10, 30, 30]",
    3: "The tumor is at (20, 10, 30, 30).",  # IoU 0.5 with the section [10, 10, 30, 30]
    4: '```json\n{"x0": 10, "y0": 10, "x1": 30, "y1": 30}\n```',
    5: "[10, 10, 30, 30]",  # beyond the tumor: the joined box reaches z 6
}
# Retrieval: each case's image and each report get these vectors.
CASE_VECTORS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
REPORT_VECTORS = [[1.0, 0.1, 0.0], [0.0, 1.0, 0.2], [0.9, 0.0, 0.5]]


@dataclass
class TaskBenchmark:
    benchmark: Benchmark
    items: dict[str, list[Item]]
    chat: dict[str, str] = field(default_factory=dict)  # prompt key or image digest -> reply
    vectors: dict[str, list[float]] = field(default_factory=dict)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _case(benchmark: Benchmark, name: str, color: tuple[int, int, int]) -> tuple[Case, bytes]:
    data = jpeg_bytes(color=color, size=ENDOSCOPY_SIZE)
    image, _created = image_store(data=data)
    case = Case.objects.create(benchmark=benchmark, case_id=name, endoscopy_image=image)
    return case, data


def _volume(case: Case) -> Volume:
    voxels = np.zeros(VOLUME_SHAPE, dtype=np.int16)
    for z in range(VOLUME_SHAPE[0]):
        voxels[z, : z + 1, :] = 100 + 20 * z  # every slice looks different
    relative = f"volumes/{case.case_id}/venous.npy"
    write_voxel_cache(voxels, Path(settings.MEDIA_ROOT) / relative)
    z, y, x = VOLUME_SHAPE
    return Volume.objects.create(
        case=case,
        phase="venous",
        size_x=x,
        size_y=y,
        size_z=z,
        spacing=[0.7, 0.7, 5.0],
        origin=[0.0, 0.0, 0.0],
        direction=[1, 0, 0, 0, 1, 0, 0, 0, 1],
        cache_path=relative,
    )


def make_task_benchmark(name: str = "gx-tasks") -> TaskBenchmark:
    """Three cases; 1 VQA, 4 classification, 2 report, 2 localization, 3 retrieval items."""
    benchmark = make_benchmark(name, family="gastricx", label_sets={"t": T_LABELS})
    cases = [_case(benchmark, f"GX-{n}", (40 + 60 * n, 90, 60)) for n in range(3)]
    (case, endoscopy), volume = cases[0], _volume(cases[0][0])
    Indicator.objects.create(case=case, name="CEA", value=12.5, unit="ng/mL", reference_high=5)
    made = TaskBenchmark(benchmark, {})
    index = iter(range(1, 100))
    made.items["vqa"] = [make_item(benchmark, index=next(index), case=case, answer="B")]
    made.chat["Which finding is shown in frame 1?"] = "B"
    made.items["classification"] = []
    for number, (truth, letter) in enumerate(CLASSIFICATION):
        question = f"What is the T stage of case {number}?"
        made.items["classification"].append(
            make_item(
                benchmark,
                index=next(index),
                case=case,
                kind="label",
                question=question,
                options=[],
                answer=truth,
                target={"field": "t"},
            )
        )
        made.chat[question] = letter
    made.items["report_generation"] = []
    for number, (reference, generated) in enumerate(REPORTS):
        question = f"Write the CT report (report {number})."
        made.items["report_generation"].append(
            make_item(
                benchmark,
                index=next(index),
                case=case,
                kind="open",
                question=question,
                options=[],
                answer="",
                reference=reference,
                target={"report": "ct"},
            )
        )
        made.chat[question] = generated
    endoscopy_item = make_item(
        benchmark,
        index=next(index),
        case=case,
        kind="box",
        question="Locate the tumor on the endoscopy image.",
        options=[],
        answer="",
        target={"label": "tumor", "image": "endoscopy", "box": ENDOSCOPY_TRUTH},
    )
    made.chat[_sha(endoscopy)] = ENDOSCOPY_ANSWER
    ct_item = make_item(
        benchmark,
        index=next(index),
        case=case,
        kind="box",
        question="Locate the tumor on the venous phase.",
        options=[],
        answer="",
        target={"label": "tumor", "phase": "venous", "voxel": VOXEL_TRUTH},
    )
    from annotations.selectors.cases import volume_voxels

    for z, reply in SLICE_ANSWERS.items():
        made.chat[_sha(render_slice_png(volume_voxels(volume), z, *CT_WINDOW))] = reply
    made.vectors[_sha(render_slice_png(volume_voxels(volume), 4, *CT_WINDOW))] = CASE_VECTORS[0]
    made.items["localization"] = [endoscopy_item, ct_item]
    made.items["retrieval"] = []
    for number, ((retrieval_case, data), reference) in enumerate(
        zip(
            cases,
            ["Report of case zero.", "Report of case one.", "Report of case two."],
            strict=True,
        )
    ):
        made.items["retrieval"].append(
            make_item(
                benchmark,
                index=next(index),
                case=retrieval_case,
                kind="retrieval",
                question="",
                options=[],
                answer="",
                reference=reference,
                target={"report": "diagnostic"},
            )
        )
        made.vectors[reference] = REPORT_VECTORS[number]
        made.vectors[_sha(data)] = CASE_VECTORS[number]
    return made


def chat_script(made: TaskBenchmark):
    """Reply by the longest known text the prompt contains, else by the first known image."""

    def script(request_json: dict[str, Any], attempt_no: int) -> Reply:
        prompt = prompt_text(request_json)
        keys = [key for key in made.chat if len(key) != 64 and key in prompt]
        if keys:
            return Reply(text=made.chat[max(keys, key=len)])
        for digest in image_digests(request_json):
            if digest in made.chat:
                return Reply(text=made.chat[digest])
        return Reply(text="none")

    return script


def embeddings_script(made: TaskBenchmark):
    def script(request_json: dict[str, Any], attempt_no: int) -> Reply:
        vectors = []
        for text in embedding_inputs(request_json):
            if text.startswith("data:"):
                text = _sha(base64.b64decode(text.split(";base64,", 1)[1]))
            vectors.append(made.vectors[text])
        return Reply(vectors=vectors)

    return script
