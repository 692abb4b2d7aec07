"""Gastric-X's tasks in a run: what is asked for an item of each kind, and how its reply is read.

An item's kind decides its task (`selectors.runs.TASK_OF_KIND`): a multiple-choice item is VQA
(answered and read exactly as before), a label item classification (its label set asked as lettered options, read
by VLMEvalKit's rules, the letter mapped back to its label), an open item report generation
(free text), a box item localization (one `[x0, y0, x1, y1]` per image asked: the endoscopy
image, or CT slices rendered from the volume and joined into a 3D box) and a retrieval pair
retrieval (the report's and its case's embeddings; ranked when the run is scored).

`task_request` runs on the executor's thread (it reads the ORM); `task_answer` in a pool thread
(plain data only: files and the network).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotations.inference import Completion, build_messages
from annotations.inference.boxparse import box_number, parse_box
from annotations.inference.task_prompts import (
    BOX_IMAGE_LABELS,
    ENDOSCOPY_LABEL,
    REPORT_KINDS,
    box_slices,
    build_localization_prompt,
    ct_slice_label,
    indicator_entry,
    item_image_label,
    label_options,
    letter_of,
    report_question,
)
from annotations.models import Image, Item, ItemKind, Volume
from annotations.scoring.boxes import box3d_from_slice_boxes

CHOICE_KINDS = (ItemKind.MCQ, ItemKind.LABEL)
CT_WINDOW = (400.0, 40.0)  # soft tissue: what radiologists read the stomach wall in


class TaskInputError(ValueError):
    """An item that cannot be asked (no case, no volume of its phase, no label set)."""


@dataclass(frozen=True)
class Picture:
    """One image sent to the model: a stored image, or an axial CT slice rendered here."""

    label: str
    width: int
    height: int
    image: Image | None = None
    cache: Path | None = None
    z: int = 0

    def data(self) -> bytes:
        if self.image is not None:
            from annotations.services.images import image_bytes

            return image_bytes(self.image)
        from annotations.imaging.window import render_slice_png
        from annotations.selectors.cases import memmaps

        if self.cache is None:
            raise TaskInputError(f"{self.label}: neither a stored image nor a CT slice")
        return render_slice_png(memmaps.get(self.cache), self.z, *CT_WINDOW)


@dataclass(frozen=True)
class TaskRequest:
    """What a pool thread needs to answer one non-multiple-choice item."""

    kind: str
    prompt: str = ""
    pictures: tuple[Picture, ...] = ()
    target: str = ""  # localization: what to find
    slices: tuple[int, ...] = ()  # localization on a volume: the z of each picture
    spans: tuple[tuple[int, int], ...] = ()  # ... and the slices each one stands for
    report: str = ""  # retrieval: the report's text
    with_image: bool = True


@dataclass
class TaskAnswer:
    completion: Completion
    fields: dict[str, Any] = field(default_factory=dict)


# --- reading items --------------------------------------------------------------------------


def label_field(item: Item) -> str:
    return str((item.target or {}).get("field") or "label")


def item_labels(item: Item, label_sets: dict[str, list[str]]) -> list[str]:
    labels = label_sets.get(label_field(item))
    if not labels:
        raise TaskInputError(f"the benchmark has no label set {label_field(item)!r}")
    return list(labels)


def choice_options(item: Item, label_sets: dict[str, list[str]]) -> tuple[dict[str, str], str]:
    """The lettered options asked and the gold letter ("" for a label outside the set)."""
    if item.kind != ItemKind.LABEL:
        return dict(item.lettered_options), item.answer
    options = label_options(item_labels(item, label_sets))
    return options, letter_of(options, item.answer)


def report_kind(item: Item) -> str:
    target = item.target or {}
    for value in (target.get("report"), target.get("kind"), item.task):
        if value in REPORT_KINDS:
            return str(value)
    return "diagnostic"


def box_truth(item: Item) -> list[float] | None:
    """The target box: 3D voxels `[x0, y0, z0, x1, y1, z1]` or 2D pixels `[x0, y0, x1, y1]`."""
    target = item.target or {}
    box = target.get("voxel") or target.get("box")
    return [float(v) for v in box] if isinstance(box, list) and len(box) in (4, 6) else None


def _slice_picture(volume: Volume, z: int) -> Picture:
    from annotations.selectors.cases import volume_cache_file

    return Picture(
        label=ct_slice_label(volume.phase, z, volume.size_z),
        width=volume.size_x,
        height=volume.size_y,
        cache=volume_cache_file(volume),
        z=z,
    )


def _image_picture(image: Image, label: str) -> Picture:
    return Picture(label=label, width=image.width, height=image.height, image=image)


def case_pictures(item: Item, *, ct: bool = True, endoscopy: bool = True) -> list[Picture]:
    """The case's images as a model sees them: the endoscopy image and the middle axial slice of
    each CT phase; the item's own images when it has no case."""
    case = item.case
    if case is None:
        return [
            _image_picture(ii.image, item_image_label(n))
            for n, ii in enumerate(item.item_images.all(), start=1)
        ]
    from annotations.selectors.cases import phase_sorted

    pictures = []
    if endoscopy and case.endoscopy_image is not None:
        pictures.append(_image_picture(case.endoscopy_image, ENDOSCOPY_LABEL))
    if ct:
        pictures += [_slice_picture(v, v.size_z // 2) for v in phase_sorted(case.volumes.all())]
    return pictures


def _indicators(item: Item) -> list[dict[str, Any]]:
    if item.case is None:
        return []
    return [
        indicator_entry(
            name=i.name,
            value=i.value,
            value_text=i.value_text,
            unit=i.unit,
            reference_low=i.reference_low,
            reference_high=i.reference_high,
        )
        for i in item.case.indicators.all()
    ]


def task_request(item: Item, *, with_image: bool) -> TaskRequest:
    """The request for an open, box or retrieval item (reads the ORM). Raises TaskInputError."""
    if item.kind == ItemKind.OPEN:
        kind = report_kind(item)
        pictures = case_pictures(item, ct=kind != "endoscopy", endoscopy=kind != "ct")
        # The same text as the question cell of the release's NAME_report.tsv row.
        prompt = report_question(
            kind,
            question=item.question,
            image_labels=[p.label for p in pictures] if with_image else [],
            indicators=_indicators(item) if kind == "diagnostic" else (),
        )
        return TaskRequest(item.kind, prompt, tuple(pictures), with_image=with_image)
    if item.kind == ItemKind.RETRIEVAL:
        if item.case is None:
            raise TaskInputError("a retrieval pair needs its case")
        if not item.reference.strip():
            raise TaskInputError("a retrieval pair needs its report text")
        return TaskRequest(item.kind, pictures=tuple(case_pictures(item)), report=item.reference)
    if item.kind == ItemKind.BOX:
        return _box_request(item, with_image=with_image)
    raise TaskInputError(f"items of kind {item.kind!r} are asked as multiple choice")


def _box_request(item: Item, *, with_image: bool) -> TaskRequest:
    target = item.target or {}
    truth = box_truth(item)
    if truth is None:
        raise TaskInputError("a localization item needs its target box")
    label = str(target.get("label") or "tumor")
    if len(truth) == 6:
        phase = target.get("phase")
        volume = item.case.volumes.filter(phase=phase).first() if item.case else None
        if volume is None:
            raise TaskInputError(f"the case has no CT volume of phase {phase!r}")
        slices, spans = box_slices(int(truth[2]), int(math.ceil(truth[5])), volume.size_z)
        pictures = tuple(_slice_picture(volume, z) for z in slices)
        return TaskRequest(item.kind, "", pictures, label, slices, spans, with_image=with_image)
    image = item.case.endoscopy_image if item.case else None
    if image is None:
        first = item.item_images.first()
        image = first.image if first else None
    if image is None:
        raise TaskInputError("a localization item needs the image its box is on")
    picture = _image_picture(image, BOX_IMAGE_LABELS[item.case is not None])
    return TaskRequest(item.kind, "", (picture,), label, with_image=with_image)


# --- answering (pool threads: no ORM) -------------------------------------------------------


def task_answer(provider: Any, embedder: Any, request: TaskRequest) -> TaskAnswer:
    """Ask the model (or the embeddings endpoint) for one item; raises ProviderError."""
    if request.kind == ItemKind.RETRIEVAL:
        return _embed(embedder, request)
    if not hasattr(provider, "complete"):
        raise TaskInputError("a baseline answers multiple-choice and classification items only")
    if request.kind == ItemKind.OPEN:
        images = [p.data() for p in request.pictures] if request.with_image else []
        completion = provider.complete(
            build_messages(request.prompt, images, with_image=request.with_image)
        )
        return TaskAnswer(completion)
    return _localize(provider, request)


def _localize(provider: Any, request: TaskRequest) -> TaskAnswer:
    replies, boxes, completions = [], {}, []
    for number, picture in enumerate(request.pictures):
        prompt = build_localization_prompt(
            request.target, image_label=picture.label, width=picture.width, height=picture.height
        )
        images = [picture.data()] if request.with_image else []
        completion = provider.complete(
            build_messages(prompt, images, with_image=request.with_image)
        )
        completions.append(completion)
        parsed = parse_box(completion.text, width=picture.width, height=picture.height)
        box = [_number(v) for v in parsed.box] if parsed else None
        if request.slices:
            z = request.slices[number]
            boxes[str(z)] = box
            replies.append(f"[slice {z + 1}] {completion.text}")
        else:
            boxes["image"] = box
            replies.append(completion.text)
    fields: dict[str, Any] = {}
    if request.slices:
        spread = {
            z: boxes[str(s)]
            for s, (start, end) in zip(request.slices, request.spans, strict=True)
            for z in range(start, end)
        }
        joined = box3d_from_slice_boxes(spread)
        fields = {
            "box": [_number(v) for v in joined] if joined else None,
            "slice_boxes": boxes,
        }
    else:
        fields = {"box": boxes["image"]}
    return TaskAnswer(_joined(completions, "\n".join(replies)), fields)


_number = box_number  # one rounding for runs and the release scorer


def _joined(completions: Sequence[Completion], text: str) -> Completion:
    def total(name: str) -> int | None:
        values = [getattr(c, name) for c in completions]
        return None if any(v is None for v in values) else sum(values)

    return Completion(
        text=text,
        latency_ms=sum(c.latency_ms for c in completions),
        prompt_tokens=total("prompt_tokens"),
        completion_tokens=total("completion_tokens"),
        attempts=sum(c.attempts for c in completions),
    )


def _embed(embedder: Any, request: TaskRequest) -> TaskAnswer:
    from annotations.scoring.retrieval import pooled_embedding

    if embedder is None:
        raise TaskInputError("retrieval needs an OpenAI-compatible embeddings endpoint")
    if not request.pictures:
        raise TaskInputError("the case has no image to embed")
    started = time.perf_counter()
    report = embedder.embed_texts([request.report])
    images = embedder.embed_images([p.data() for p in request.pictures])
    case = pooled_embedding(images.vectors)
    tokens = report.prompt_tokens
    completion = Completion(
        text="",
        latency_ms=(time.perf_counter() - started) * 1000,
        prompt_tokens=tokens,
        attempts=report.attempts + images.attempts,
    )
    embedding = {"report": report.vectors[0].tolist(), "case": case.tolist()}
    return TaskAnswer(completion, {"embedding": embedding})
