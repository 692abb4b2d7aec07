"""Checking and normalising encoded 2D images (bytes in, facts or bytes out)."""

from __future__ import annotations

import hashlib
import io
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from PIL import Image

from annotations.imaging.metadata import JPEG_SIGNATURE, MetadataError, strip_jpeg, strip_png

# Formats whose decoders are plain pixel codecs. Pillow can also open formats that
# shell out (EPS runs Ghostscript) or are rarely what a clinician uploads; an
# import must never hand untrusted bytes to those.
ACCEPTED_FORMATS = ("JPEG", "PNG", "GIF", "BMP", "TIFF", "WEBP")

# VLMEvalKit decodes anything PIL opens, but JPEG and PNG are what every consumer
# of a release expects; MPO is a JPEG whose first frame any JPEG decoder reads.
_PASS_THROUGH_FORMATS = frozenset({"JPEG", "PNG", "MPO"})
_PNG_MODES = frozenset({"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"})
_JPEG_MODES = {1: "L", 3: "RGB", 4: "CMYK"}


class ImageError(ValueError):
    """The bytes are not a usable image (unknown format, truncated, too large)."""


@dataclass(frozen=True)
class ImageInfo:
    format: str
    width: int
    height: int
    mode: str


@dataclass(frozen=True)
class PreparedImage:
    """An image as an import stores it: checked, without metadata; `removed` says what went."""

    data: bytes
    info: ImageInfo
    removed: tuple[str, ...]


def sha256_hex(data: bytes) -> str:
    """Content hash under which an image is stored once."""
    return hashlib.sha256(data).hexdigest()


def inspect_image(data: bytes, *, max_pixels: int | None = None) -> ImageInfo:
    """Decode `data` fully and describe it, or raise `ImageError`.

    `max_pixels` defaults to Pillow's `Image.MAX_IMAGE_PIXELS`; a larger value
    cannot lift Pillow's own guard, which stays in force. Exceeding the limit is
    an error (Pillow only warns below twice its limit).
    """
    with _decoded_image(data, max_pixels) as image:
        return ImageInfo(image.format or "", image.width, image.height, image.mode)


def prepare_image(data: bytes, *, max_pixels: int | None = None) -> PreparedImage:
    """Check `data` and return it as an import stores it, or raise `ImageError`.

    The pixel limit is checked from the header, before anything is decoded. JPEG is checked
    by walking its segments to the image end (what a decode would refuse as truncated or
    not JPEG) without decoding it; PNG and the rarer formats are decoded once. Metadata is
    removed losslessly from JPEG and PNG (`annotations.imaging.metadata`); other formats,
    whose metadata we do not walk, are stored as PNG of the same pixels.
    """
    if data.startswith(JPEG_SIGNATURE):
        return _prepared_jpeg(data, _pixel_limit(max_pixels))
    image = _open_checked(data, _pixel_limit(max_pixels))
    try:
        source_format = image.format or ""
        _load(image)
        info = ImageInfo(source_format, image.width, image.height, image.mode)
        if source_format == "PNG":
            stripped = _stripped(strip_png, data)
            return PreparedImage(stripped.data, info, stripped.removed)
        info = ImageInfo("PNG", image.width, image.height, image.mode)
        return PreparedImage(_png_of(image), info, (f"stored as PNG (was {source_format})",))
    finally:
        image.close()


def _prepared_jpeg(data: bytes, limit: int | None) -> PreparedImage:
    # The segment walk reads what Pillow's header parse would (size, colour components) and
    # checks the structure to the image end; nothing is decoded.
    stripped = _stripped(strip_jpeg, data)
    mode = _JPEG_MODES.get(stripped.components)
    if mode is None:
        raise ImageError(f"not an image: JPEG with {stripped.components} colour components")
    pixels = stripped.width * stripped.height
    if limit is not None and pixels > limit:
        raise ImageError(
            f"decompression bomb: {stripped.width}x{stripped.height} = {pixels} pixels "
            f"exceeds the limit of {limit}"
        )
    info = ImageInfo("JPEG", stripped.width, stripped.height, mode)
    return PreparedImage(stripped.data, info, stripped.removed)


def encode_for_vlmeval(data: bytes) -> bytes:
    """Return bytes VLMEvalKit and viewers read: JPEG/PNG unchanged, others as PNG."""
    with _decoded_image(data, None) as image:
        if image.format in _PASS_THROUGH_FORMATS:
            return data
        return _png_of(image)


def _png_of(image: Image.Image) -> bytes:
    if image.mode not in _PNG_MODES:
        has_alpha = "A" in image.getbands()
        image = image.convert("RGBA" if has_alpha else "RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _stripped(strip, data: bytes):
    try:
        return strip(data)
    except MetadataError as exc:
        raise ImageError(f"image cannot be decoded: {exc}") from exc


def _load(image: Image.Image) -> None:
    try:
        image.load()
    except Exception as exc:  # decoders raise many types on corrupt data
        raise ImageError(f"image cannot be decoded: {_describe(exc)}") from exc


@contextmanager
def _decoded_image(data: bytes, max_pixels: int | None) -> Iterator[Image.Image]:
    image = _open_checked(data, _pixel_limit(max_pixels))
    try:
        _load(image)
        yield image
    finally:
        image.close()


def _pixel_limit(max_pixels: int | None) -> int | None:
    pillow_limit = Image.MAX_IMAGE_PIXELS
    if max_pixels is None:
        return pillow_limit
    return max_pixels if pillow_limit is None else min(max_pixels, pillow_limit)


def _open_checked(data: bytes, limit: int | None) -> Image.Image:
    if not data:
        raise ImageError("not an image: no bytes")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=ACCEPTED_FORMATS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(f"decompression bomb: {exc}") from exc
    except Exception as exc:  # UnidentifiedImageError, SyntaxError, struct.error...
        raise ImageError(f"not an image: {_describe(exc)}") from exc
    pixels = image.width * image.height
    if limit is not None and pixels > limit:
        image.close()
        raise ImageError(
            f"decompression bomb: {image.width}x{image.height} = {pixels} pixels "
            f"exceeds the limit of {limit}"
        )
    return image


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
