"""Decoding the image and image_path cells of a VLMEvalKit TSV row."""

from __future__ import annotations

import ast
import base64
import binascii
import re
from dataclasses import dataclass, field

from annotations.imaging.images import ImageError, inspect_image

# VLMEvalKit reads an image cell of at most 64 characters as the index of
# another row whose image is reused.
MAX_REFERENCE_CHARS = 64

_INTEGER = re.compile(r"[+-]?[0-9]+")
_WHITESPACE = re.compile(r"\s+")


class CellError(ValueError):
    """A cell's content is unusable; the message is shown to the curator."""


@dataclass
class ImageCell:
    images: list[bytes] = field(default_factory=list)
    reference: int | None = None


def parse_integer(text: str) -> int | None:
    """The integer written in `text` (surrounding spaces allowed), else None."""
    stripped = text.strip()
    return int(stripped) if _INTEGER.fullmatch(stripped) else None


def parse_image_cell(text: str, *, validate_images: bool = True) -> ImageCell:
    """Decode one `image` cell: base64, a list literal of base64, or a reuse reference."""
    if not text.strip():
        raise CellError("empty image cell (VLMEvalKit drops such rows)")
    if len(text) <= MAX_REFERENCE_CHARS:
        reference = parse_integer(text)
        if reference is None:
            raise CellError(
                f"a cell of {len(text)} characters is read as the index of another row, "
                f"but {text.strip()!r} is not an integer"
            )
        return ImageCell(reference=reference)
    if text.lstrip().startswith("["):
        encoded = parse_string_list(text)
        if not encoded:
            raise CellError("empty list of images")
        images = []
        for number, item in enumerate(encoded, start=1):
            try:
                images.append(decode_image(item, validate_images=validate_images))
            except CellError as exc:
                raise CellError(f"image {number} of {len(encoded)}: {exc}") from None
        return ImageCell(images=images)
    return ImageCell(images=[decode_image(text, validate_images=validate_images)])


def decode_image(text: str, *, validate_images: bool = True) -> bytes:
    """Decode strict base64 (whitespace ignored) and, if asked, check it is an image."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        # Whitespace is rare, so only pay for the copy that removes it on failure.
        try:
            data = base64.b64decode(_WHITESPACE.sub("", text), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise CellError(f"broken base64: {_base64_reason(text, exc)}") from None
    if validate_images:
        try:
            inspect_image(data)
        except ImageError as exc:
            raise CellError(f"base64 does not hold a usable image: {exc}") from None
    return data


def parse_path_cell(text: str) -> list[str]:
    """An `image_path` cell: one path, a list literal of paths, or nothing."""
    if _looks_like_list(text):
        return parse_string_list(text)
    return [text] if text.strip() else []


def parse_string_list(text: str) -> list[str]:
    """Parse a Python list literal of strings, as VLMEvalKit writes several images."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise CellError(f"malformed list literal: {type(exc).__name__}") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise CellError("malformed list literal: expected a list of strings")
    return value


def _looks_like_list(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith("[") and stripped.endswith("]")


def _base64_reason(text: str, exc: Exception) -> str:
    if text.lstrip().startswith("data:"):
        return "a data: URL prefix is not allowed, the cell must hold plain base64"
    bad = next((char for char in text if not _is_base64_char(char)), None)
    if bad is not None:
        return f"invalid character {bad!r}"
    return str(exc)


def _is_base64_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char in "+/=" or char.isspace())
