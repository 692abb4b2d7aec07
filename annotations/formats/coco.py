"""COCO detection JSON for 2D boxes drawn on images (pixels, `bbox` = [x, y, w, h])."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO, Any

from annotations.formats.jsonexport import dumps_canonical, text_writer


def write_coco(
    out: IO[str] | IO[bytes],
    images: Iterable[Mapping[str, Any]],
    boxes: Iterable[Mapping[str, Any]],
    categories: list[str],
    *,
    header: Mapping[str, Any] | None = None,
    sections: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
) -> None:
    """Stream a COCO file: `{"categories": [...], "images": [...], "annotations": [...]}`.

    `images`: `{"id": int, "file_name": str, "width": int, "height": int}` (other
    keys are kept). `boxes`: `{"image_id": int, "label": <one of categories>,
    "x": float, "y": float, "width": float, "height": float}` in pixels of that
    image, optional `"score"` and `"item_index"`. Category ids are 1-based positions in `categories`;
    annotation ids number the boxes from 1. Raises ValueError for a box on an
    unknown image, with an unknown label, empty, or outside its image. `header` keys are
    written first, then `sections` (lists of objects, one a line) after the annotations.
    """
    category_ids = _category_ids(categories)
    write = text_writer(out)
    write("{" + (dumps_canonical(dict(header))[1:-1] + "," if header else "") + '"categories":[')
    write(
        ",".join(dumps_canonical(_category(name, number)) for name, number in category_ids.items())
    )
    write('],\n"images":[')
    sizes: dict[int, tuple[float, float]] = {}
    for number, image in enumerate(images):
        sizes[_checked_image_id(image, sizes)] = (image["width"], image["height"])
        write(("\n," if number else "\n") + dumps_canonical(dict(image)))
    write('\n],\n"annotations":[')
    for number, box in enumerate(boxes, start=1):
        annotation = _annotation(number, box, sizes, category_ids)
        write(("\n," if number > 1 else "\n") + dumps_canonical(annotation))
    for name, entries in (sections or {}).items():
        write(f'\n],\n"{name}":[')
        for number, entry in enumerate(entries):
            write(("\n," if number else "\n") + dumps_canonical(dict(entry)))
    write("\n]}\n")


def _category_ids(categories: list[str]) -> dict[str, int]:
    if len(set(categories)) != len(categories):
        raise ValueError(f"duplicate category names in {categories}")
    return {name: number for number, name in enumerate(categories, start=1)}


def _category(name: str, number: int) -> dict[str, Any]:
    return {"id": number, "name": name, "supercategory": ""}


def _checked_image_id(image: Mapping[str, Any], sizes: dict[int, tuple[float, float]]) -> int:
    missing = {"id", "file_name", "width", "height"} - image.keys()
    if missing:
        raise ValueError(f"image {dict(image)!r} lacks {sorted(missing)}")
    if image["id"] in sizes:
        raise ValueError(f"duplicate image id {image['id']}")
    return image["id"]


def _annotation(
    number: int,
    box: Mapping[str, Any],
    sizes: Mapping[int, tuple[float, float]],
    category_ids: Mapping[str, int],
) -> dict[str, Any]:
    image_id, label = box["image_id"], box["label"]
    if image_id not in sizes:
        raise ValueError(f"box {number} is on image {image_id}, which is not exported")
    if label not in category_ids:
        raise ValueError(f"box {number} has label {label!r}, not one of {list(category_ids)}")
    x, y, width, height = (box[key] for key in ("x", "y", "width", "height"))
    image_width, image_height = sizes[image_id]
    if width <= 0 or height <= 0:
        raise ValueError(f"box {number} is empty ({width}x{height})")
    if x < 0 or y < 0 or x + width > image_width or y + height > image_height:
        raise ValueError(f"box {number} lies outside its {image_width}x{image_height} image")
    annotation = {
        "id": number,
        "image_id": image_id,
        "category_id": category_ids[label],
        "bbox": [x, y, width, height],
        "area": width * height,
        "iscrowd": 0,
    }
    for key in ("score", "item_index"):
        if box.get(key) is not None:
            annotation[key] = box[key]
    return annotation
