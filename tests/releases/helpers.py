"""Benchmarks for release tests: shared frames, multi-image items, every status, reviews, boxes."""

from __future__ import annotations

import ast
import base64
import io

import pandas as pd
from PIL import Image as PILImage

from annotations.models import (
    Adjudication,
    Box,
    ItemImage,
    ItemRevision,
    Review,
    RevisionReason,
)
from annotations.services.images import image_store
from tests.factories import jpeg_bytes, make_benchmark, make_item, png_bytes

ENDO_COLUMNS = [
    "index",
    "image",
    "question",
    "category",
    "task",
    "answer",
    "gt",
    "A",
    "B",
    "C",
    "D",
]


def gif_bytes() -> bytes:
    buffer = io.BytesIO()
    PILImage.new("P", (12, 10), 3).save(buffer, format="GIF")
    return buffer.getvalue()


def endo_benchmark(people: dict, name: str = "endo"):
    """Six items: 1–4 curated (2 reuses 1's frame, 3 has two images), 5 disputed, 6 rejected."""
    benchmark = make_benchmark(name, family="endobench", columns=ENDO_COLUMNS)
    shared = jpeg_bytes(color=(180, 40, 40))
    fields = {"task": "Landmark identification", "status": "agreed"}
    first = make_item(
        benchmark, index=1, image=shared, split="dev", extra={"gt": "Polyp"}, **fields
    )
    make_item(benchmark, index=2, image=shared, split="dev", category="Anatomy", **fields)
    pair = make_item(benchmark, index=3, image=png_bytes(), split="test", **fields)
    stored, _ = image_store(data=gif_bytes())
    ItemImage.objects.create(item=pair, image=stored, position=1)
    make_item(
        benchmark, index=4, split="test", answer="C", task="Polyp sizing", status="adjudicated"
    )
    make_item(benchmark, index=5, split="dev", status="disputed")
    make_item(benchmark, index=6, split="dev", status="rejected")
    Review.objects.create(item=first, reviewer=people["reviewer"], item_version=1, verdict="accept")
    Review.objects.create(
        item=first,
        reviewer=people["reviewer2"],
        item_version=1,
        verdict="reject",
        reason="ambiguous",
    )
    Adjudication.objects.create(
        item=first, adjudicator=people["adjudicator"], choice="a", item_version=1
    )
    image = first.item_images.get().image
    Box.objects.create(image=image, label="polyp", x0=2, y0=3, x1=12, y1=13, state="accepted")
    Box.objects.create(image=image, label="lesion", x0=0, y0=0, x1=4, y1=4, state="rejected")
    return benchmark


def edit(item, **content) -> None:
    """A new revision of an item's content, as the review services would write it."""
    for name, value in content.items():
        setattr(item, name, value)
    item.version += 1
    item.save()
    ItemRevision.objects.create(
        item=item,
        version=item.version,
        replaced_version=item.version - 1,
        content=item.content(),
        reason=RevisionReason.EDITED,
    )


def read_tsv(path) -> pd.DataFrame:
    """Read a release TSV exactly as VLMEvalKit does."""
    return pd.read_csv(path, sep="\t")


def resolved_images(frame: pd.DataFrame) -> dict[int, list[bytes]]:
    """index -> decoded image bytes, resolving reuse references and list cells like VLMEvalKit."""
    cells = {str(i): str(cell) for i, cell in zip(frame["index"], frame["image"], strict=True)}
    resolved = {}
    for index, cell in cells.items():
        if len(cell) <= 64:
            cell = cells[cell]
            assert len(cell) > 64, "a reuse reference must point at a row holding an image"
        values = ast.literal_eval(cell) if cell.startswith("[") else [cell]
        resolved[int(index)] = [base64.b64decode(value) for value in values]
    return resolved


def decodes(data: bytes) -> bool:
    with PILImage.open(io.BytesIO(data)) as image:
        image.load()
    return True
