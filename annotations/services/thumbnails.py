"""List thumbnails: made once per image and size, then served from their stored file."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from django.conf import settings

from annotations.imaging.thumbs import make_thumbnail
from annotations.models import Image

# Twice the list's 44 px cell and the hub's larger cell, for high-density screens.
THUMB_SIZES = (96, 192)


def thumbnail_path(image: Image, size: int) -> Path:
    # Keyed by the content's hash: an image never changes under its sha, so neither does this.
    return Path(settings.MEDIA_ROOT) / "thumbs" / image.sha256[:2] / f"{image.sha256}-{size}.webp"


def thumbnail_get_or_create(*, image: Image, size: int) -> Path:
    """The stored thumbnail of `image` at `size`, made on first use. Two requests racing make
    it twice and the second rename wins with identical bytes; no lock is needed."""
    if size not in THUMB_SIZES:
        raise ValueError(f"no thumbnail size {size}")
    path = thumbnail_path(image, size)
    if path.is_file():
        return path
    with image.file.open("rb") as source:
        data = make_thumbnail(source, size)  # type: ignore[arg-type]  # a binary file
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    partial.write_bytes(data)
    os.replace(partial, path)
    return path
