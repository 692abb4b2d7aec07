"""Storing image bytes once, by content hash."""

from __future__ import annotations

import hashlib

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotations.imaging.images import ImageInfo, inspect_image
from annotations.models import Image


def image_store(*, data: bytes, info: ImageInfo | None = None) -> tuple[Image, bool]:
    """Return the Image for these bytes, storing the file if it is new (created=True).

    The bytes are validated as an image unless the caller already did (info given).
    """
    digest = hashlib.sha256(data).hexdigest()
    existing = Image.objects.filter(sha256=digest).first()
    if existing is not None:
        return existing, False
    info = info or inspect_image(data)
    image = Image(
        sha256=digest,
        format=info.format,
        width=info.width,
        height=info.height,
        size_bytes=len(data),
    )
    name = image.file.field.upload_to(image, "")
    if not default_storage.exists(name):
        # Storage may not rename: the name is the hash, so an existing file already holds these bytes.
        default_storage.save(name, ContentFile(data))
    image.file.name = name
    image.save()
    return image, True


def image_bytes(image: Image) -> bytes:
    with default_storage.open(image.file.name, "rb") as handle:
        return handle.read()


def image_files_delete(names: list[str]) -> None:
    """Remove files written by a failed import (the rows are rolled back with its transaction)."""
    for name in names:
        if not Image.objects.filter(file=name).exists():
            default_storage.delete(name)
