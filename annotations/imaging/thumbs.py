"""Small previews of stored images for lists (bytes in, WebP bytes out)."""

from __future__ import annotations

import io
from typing import BinaryIO

import numpy as np
from PIL import Image

THUMB_FORMAT = "WEBP"
THUMB_CONTENT_TYPE = "image/webp"


def _eight_bit(image: Image.Image) -> Image.Image:
    """16-bit and float greyscale (some radiology PNGs) stretched to 8 bits, min to max."""
    pixels = np.asarray(image, dtype=np.float64)
    low, high = float(pixels.min()), float(pixels.max())
    scaled = (pixels - low) * (255.0 / (high - low)) if high > low else pixels * 0
    return Image.fromarray(scaled.astype(np.uint8), mode="L")


def make_thumbnail(source: BinaryIO, size: int) -> bytes:
    """The image scaled to fit `size`×`size` (never enlarged), as WebP."""
    with Image.open(source) as image:
        # JPEG decodes at 1/2, 1/4 or 1/8 scale when asked: a list never pays for full frames.
        image.draft("RGB", (size * 2, size * 2))
        image.seek(0)
        if image.mode in ("I", "I;16", "I;16B", "I;16L", "F"):
            frame = _eight_bit(image)
        elif image.mode in ("RGB", "RGBA", "L"):
            frame = image.copy()
        else:
            frame = image.convert(
                "RGBA" if "A" in image.mode or "transparency" in image.info else "RGB"
            )
    frame.thumbnail((size, size), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    frame.save(out, THUMB_FORMAT, quality=80, method=4)
    return out.getvalue()
