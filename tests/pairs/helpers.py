"""Pair fixtures: clean items with small synthetic images of several modalities."""

from __future__ import annotations

import numpy as np

from annotations.imaging import phantoms
from annotations.models import Benchmark, Item
from annotations.services.degrade import encode_png
from tests.factories import make_benchmark, make_item

SIZE = 40


def modality_png(modality: str, *, seed: int = 0, size: int = SIZE) -> bytes:
    if modality == "CT":
        return encode_png(phantoms.ct_slice_8bit(size, seed=seed))
    if modality == "MRI":
        return encode_png(phantoms.mri_brain(size, seed=seed))  # 16-bit grey
    if modality == "Histopathology":
        return encode_png(phantoms.histopathology_tile(size, seed=seed))
    if modality == "Dermoscopy":
        return encode_png(phantoms.dermoscopy_image(size, seed=seed))
    return encode_png(np.asarray(phantoms.xray_chest(size, seed=seed)))


def make_pair_benchmark(
    name: str = "medq", modalities=("CT", "Dermoscopy"), *, size: int = SIZE
) -> Benchmark:
    benchmark = make_benchmark(
        name,
        family="medqdeg",
        columns=[
            "index",
            "image",
            "question",
            "A",
            "B",
            "C",
            "D",
            "answer",
            "modality",
            "degradation_type",
            "degradation_severity",
            "source",
        ],
    )
    for position, modality in enumerate(modalities):
        make_item(
            benchmark,
            index=position,
            image=modality_png(modality, seed=position, size=size),
            modality=modality,
            source="TCIA" if modality == "CT" else "ISIC",
            degradation_severity="clean",
            extra={"image_path": f"images/{position}.png", "note": "kept"},
        )
    return benchmark


def twins_of(item: Item):
    return Item.objects.filter(clean_twin=item).order_by("source_index")
