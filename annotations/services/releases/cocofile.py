"""NAME_coco.json: the 2D boxes on a release's images, as COCO detection annotations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from django.db.models import QuerySet

from annotations.formats.coco import write_coco
from annotations.models import Box, BoxLabel, Image, Item, ItemImage
from annotations.services.releases.sources import EXTENSIONS

CHUNK = 2000


def write_release_coco(out: IO[bytes], items: QuerySet[Item]) -> None:
    """Stream the COCO file of the images of `items` that carry 2D boxes (rejected ones left out).

    Image ids are the stored images' ids, so no table of images is built; `file_name` is the
    image's name in the release's images/ folder.
    """
    image_ids = ItemImage.objects.filter(item__in=items).values("image_id")
    boxes = (
        Box.objects.filter(volume__isnull=True, image_id__in=image_ids)
        .exclude(state__in=Box.LEFT_OUT)
        .order_by("image_id", "id")
    )
    images = Image.objects.filter(id__in=boxes.values("image_id")).order_by("id")
    write_coco(out, _images(images), _boxes(boxes), [label for label, _ in BoxLabel.choices])


def _images(images: QuerySet[Image]) -> Iterator[dict]:
    rows = images.values_list("id", "sha256", "format", "width", "height")
    for image_id, sha256, image_format, width, height in rows.iterator(chunk_size=CHUNK):
        yield {
            "id": image_id,
            # Converted formats are written as PNG named by their own hash; the source hash
            # keeps the link to the stored image.
            "file_name": f"{sha256}.{EXTENSIONS.get(image_format, 'png')}",
            "sha256": sha256,
            "width": width,
            "height": height,
        }


def _boxes(boxes: QuerySet[Box]) -> Iterator[dict]:
    rows = boxes.values_list("image_id", "label", "x0", "y0", "x1", "y1")
    for image_id, label, x0, y0, x1, y1 in rows.iterator(chunk_size=CHUNK):
        yield {
            "image_id": image_id,
            "label": label,
            "x": x0,
            "y": y0,
            "width": x1 - x0,
            "height": y1 - y0,
        }
