"""A small pool built directly (fast): images with structure, several questions each."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image as PILImage

from annotations.models import Benchmark, Item, ItemImage, ItemRevision, RevisionReason
from annotations.services.draw import pool_mark
from annotations.services.images import image_store

SCENES = ("colonoscopy", "gastroscopy")
TASKS = ("landmark", "lesion", "instrument")
QUESTIONS = (
    "Which anatomical landmark is shown in this image?",
    "Which lesion is visible in this endoscopic image?",
    "Which instrument appears in this frame?",
)


def textured_jpeg(seed: int, quality: int = 92) -> bytes:
    """A picture with structure (flat frames hash alike), different per seed."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
    image = PILImage.fromarray(coarse).resize((64, 64), PILImage.Resampling.BICUBIC)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def make_pool(
    name: str = "endo-pool",
    *,
    images_per_stratum: int = 12,
    questions_per_image: int = 3,
    option_count: int = 4,
    answer_letter: str = "A",
) -> Benchmark:
    """Per (scene, task) `images_per_stratum` images, each with `questions_per_image`
    questions (one of them a case-changed exact duplicate of the first when there are 3+),
    answers mostly `answer_letter`."""
    pool = Benchmark.objects.create(
        name=name,
        family="endobench",
        columns=["index", "image", "question", "A", "B", "C", "D", "answer", "scene", "task"],
        option_letters=list("ABCD"),
        taxonomy={"category": list(TASKS), "scene": list(SCENES), "task": list(TASKS)},
    )
    index = 0
    for s, scene in enumerate(SCENES):
        for t, task in enumerate(TASKS):
            for n in range(images_per_stratum):
                stored, _ = image_store(data=textured_jpeg(1000 * s + 100 * t + n))
                for q in range(questions_per_image):
                    index += 1
                    question = QUESTIONS[q % len(QUESTIONS)]
                    if q == 2:
                        question = QUESTIONS[0].upper()  # the same question, shouted
                    options = [f"{task} option {k}" for k in range(option_count)]
                    answer = answer_letter if index % 5 else "B"
                    item = Item.objects.create(
                        benchmark=pool,
                        source_index=index * 10,
                        question=question,
                        options=options,
                        answer=answer,
                        scene=scene,
                        task=task,
                        category=task,
                    )
                    ItemImage.objects.create(item=item, image=stored, position=0)
                    ItemRevision.objects.create(
                        item=item,
                        version=1,
                        content=item.content(),
                        reason=RevisionReason.IMPORTED,
                    )
    return pool_mark(benchmark=pool)
