"""A benchmark with known, seeded flaws, and simulated models answering it through the runs
machinery against the loopback OpenAI-compatible server."""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image as PILImage

from annotations.models import Benchmark, Item
from annotations.scoring.triage.types import (
    ANSWER_OUT_OF_RANGE,
    DUPLICATE_IMAGE,
    DUPLICATE_OPTIONS,
    DUPLICATE_QUESTION,
    EMPTY_OPTION,
    EMPTY_QUESTION,
    GT_MISMATCH,
    SPLIT_LEAKAGE,
)
from annotations.services.runs import endpoint_ensure_openai, run_create, run_execute
from tests.factories import make_benchmark, make_item
from tests.support.fake_openai import FakeOpenAIServer, Reply, oracle, prompt_text

LETTERS = "ABCD"
FINDINGS = [
    "Polyp", "Ulcer", "Normal mucosa", "Bleeding", "Erosion", "Varices", "Tumor", "Diverticulum",
    "Inflammation", "Stricture", "Lymphangiectasia", "Angiodysplasia",
]  # fmt: skip
TASKS = ("lesion", "anatomy", "instrument", "bleeding")
TEXT_TASK = "anatomy"  # its questions give their answer away: blind runs solve them


def texture_jpeg(seed: int, quality: int = 92, size: int = 96) -> bytes:
    """A distinct endoscopy-ish texture: seeded low-frequency colour noise, upsampled."""
    rng = np.random.default_rng(seed)
    small = (rng.random((8, 8, 3)) * 255).astype("uint8")
    image = PILImage.fromarray(small).resize((size, size), PILImage.BICUBIC)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


@dataclass
class Seeded:
    benchmark: Benchmark
    items: list[Item]
    originals: dict[str, str] = field(default_factory=dict)  # question -> pre-flip letter
    flipped: set[int] = field(default_factory=set)  # item ids
    broken: dict[int, str] = field(default_factory=dict)  # item id -> expected code
    pairs: list[tuple[int, int, str]] = field(default_factory=list)  # (id, id, expected code)


def seed_noisy_benchmark(n: int = 500, flips: int = 25, seed: int = 7) -> Seeded:
    """n items; `flips` gold answers flipped; 3 re-encoded frame pairs (one across dev/test),
    one near-identical question pair, and one item per kind of breakage."""
    rng = random.Random(seed)
    benchmark = make_benchmark(
        f"noisy-{seed}", family="endobench", option_letters=list(LETTERS), taxonomy={}
    )
    seeded = Seeded(benchmark, [])
    for index in range(n):
        options = rng.sample(FINDINGS, 4)
        answer = rng.choice(LETTERS)
        task = TASKS[index % len(TASKS)]
        question = f"Case {index}: which finding is shown in this {task} frame?"
        item = make_item(
            benchmark,
            index=index,
            image=texture_jpeg(seed * 100_000 + index),
            question=question,
            options=options,
            answer=answer,
            task=task,
            category=task,
            split="test" if index % 5 == 0 else "dev",
            extra={"gt": options[LETTERS.index(answer)]},
        )
        seeded.items.append(item)
        seeded.originals[question] = answer
    _flip(seeded, rng, flips)
    _duplicate(seeded)
    _break(seeded)
    return seeded


def _save(item: Item, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(item, name, value)
    item.save()


def _flip(seeded: Seeded, rng: random.Random, flips: int) -> None:
    # Items 0-39 are kept for the planted duplicates and breakages below.
    for item in rng.sample(seeded.items[40:], flips):
        letter = rng.choice([x for x in LETTERS if x != item.answer])
        _save(item, answer=letter, extra={"gt": item.options[LETTERS.index(letter)]})
        seeded.flipped.add(item.pk)


def _duplicate(seeded: Seeded) -> None:
    from annotations.models import ItemImage
    from annotations.services.images import image_store

    items, seed = seeded.items, seeded.benchmark.pk
    for first, second in ((1, 2), (3, 4), (6, 5)):  # 5 is a test item, 6 a dev item
        stored, _ = image_store(data=texture_jpeg(seed * 7919 + first, quality=55))
        again, _ = image_store(data=texture_jpeg(seed * 7919 + first, quality=95))
        ItemImage.objects.filter(item=items[first]).update(image=stored)
        ItemImage.objects.filter(item=items[second]).update(image=again)
        code = SPLIT_LEAKAGE if items[first].split != items[second].split else DUPLICATE_IMAGE
        seeded.pairs.append((items[first].pk, items[second].pk, code))
    # The same question (one typo), the same options, on the same stored frame.
    copy, source = items[8], items[7]
    _save(
        copy,
        question=source.question.replace("finding", "findng"),
        options=list(source.options),
        answer=source.answer,
        extra=dict(source.extra),
    )
    seeded.originals[copy.question] = source.answer
    image_id = ItemImage.objects.get(item=source).image_id
    ItemImage.objects.filter(item=copy).update(image_id=image_id)
    seeded.pairs.append((source.pk, copy.pk, DUPLICATE_QUESTION))


def _break(seeded: Seeded) -> None:
    items = seeded.items
    na = items[11]
    _save(na, options=[na.options[0], "NA", na.options[2], na.options[3]], answer="A",
          extra={"gt": na.options[0]})  # fmt: skip
    same = items[12]
    _save(same, options=[same.options[0], same.options[1], same.options[0].upper(),
                         same.options[3]], answer="B", extra={"gt": same.options[1]})  # fmt: skip
    _save(items[13], answer="F")
    _save(items[14], question="   ")
    _save(items[15], extra={"gt": "Something else entirely"})
    seeded.broken = {
        na.pk: EMPTY_OPTION,
        same.pk: DUPLICATE_OPTIONS,
        items[13].pk: ANSWER_OUT_OF_RANGE,
        items[14].pk: EMPTY_QUESTION,
        items[15].pk: GT_MISMATCH,
    }


def blind_script(originals: dict[str, str], seed: int = 99):
    """A model without the image: right on the give-away task, guessing elsewhere."""
    text_oracle = oracle(originals, accuracy=0.97, seed=seed)

    def script(request_json: dict, attempt_no: int) -> Reply:
        if f"{TEXT_TASK} frame" in prompt_text(request_json):
            return text_oracle(request_json, attempt_no)
        return Reply(text=random.Random(prompt_text(request_json)).choice(LETTERS))

    return script


def run_models(seeded: Seeded, *, accuracies=(0.8, 0.8, 0.8), blind: bool = True) -> list:
    """Three (seeing) models of about 80% accuracy answering the ORIGINAL letters, and one run
    without images, each through run_create + run_execute against one fake server."""
    scripts = {
        f"model-{k}": oracle(seeded.originals, accuracy=acc, seed=k)
        for k, acc in enumerate(accuracies)
    }
    scripts["blind"] = blind_script(seeded.originals)

    def dispatch(request_json: dict, attempt_no: int) -> Reply:
        return scripts[request_json["model"]](request_json, attempt_no)

    runs = []
    with FakeOpenAIServer(script=dispatch) as server:
        names = [*(name for name in scripts if name != "blind"), *(["blind"] if blind else [])]
        for name in names:
            endpoint = endpoint_ensure_openai(name=name, base_url=server.base_url, model=name)
            run = run_create(
                benchmark=seeded.benchmark,
                endpoint=endpoint,
                with_image=name != "blind",
                concurrency=32,
                enqueue=False,
            )
            runs.append(run_execute(run_id=run.pk, poll_seconds=0.05))
    return runs
