"""Decoding the image and image_path cells of a VLMEvalKit TSV row."""

from __future__ import annotations

import ast
import base64
import binascii
import re
from dataclasses import dataclass, field

import pybase64

from annotations.formats.errors import RowWarning
from annotations.imaging.images import ImageError, ImageInfo, prepare_image

# VLMEvalKit reads an image cell of at most 64 characters as the index of
# another row whose image is reused.
MAX_REFERENCE_CHARS = 64
DEFAULT_MAX_CELL_BYTES = 64 * 1024**2

# A spreadsheet reads a cell starting with one of these as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?%?")

_INTEGER = re.compile(r"[+-]?[0-9]+")
_WHITESPACE = re.compile(r"\s+")


class CellError(ValueError):
    """A cell's content is unusable; the message says what was found, `code` why (a reason
    code the app translates)."""

    def __init__(self, message: str, code: str = "bad_cell") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ReadLimits:
    """Bounds a reader checks before decoding anything.

    `max_cell_bytes` bounds one cell (base64 image cells are the large ones) and one image
    file; `max_image_pixels` the pixels an image may decode to (None: Pillow's limit).
    """

    max_cell_bytes: int = DEFAULT_MAX_CELL_BYTES
    max_image_pixels: int | None = None


@dataclass
class ImageCell:
    """Decoded images (without metadata when validated), their facts and what was removed."""

    images: list[bytes] = field(default_factory=list)
    reference: int | None = None
    infos: list[ImageInfo] = field(default_factory=list)
    removed: list[tuple[str, ...]] = field(default_factory=list)


def parse_integer(text: str) -> int | None:
    """The integer written in `text` (surrounding spaces allowed), else None."""
    stripped = text.strip()
    return int(stripped) if _INTEGER.fullmatch(stripped) else None


def parse_image_cell(
    text: str, *, validate_images: bool = True, limits: ReadLimits = ReadLimits()
) -> ImageCell:
    """Decode one `image` cell: base64, a list literal of base64, or a reuse reference.

    The cell's size is checked before anything is decoded; validated images come back
    checked (`prepare_image`) and without their metadata.
    """
    if not text.strip():
        raise CellError("empty image cell (VLMEvalKit drops such rows)", "empty_image")
    if len(text) > limits.max_cell_bytes:
        raise CellError(
            f"image cell of {len(text):,} characters is over the limit of {limits.max_cell_bytes:,}",
            "cell_too_large",
        )
    if len(text) <= MAX_REFERENCE_CHARS:
        reference = parse_integer(text)
        if reference is None:
            raise CellError(
                f"a cell of {len(text)} characters is read as the index of another row, "
                f"but {text.strip()!r} is not an integer",
                "image_not_readable",
            )
        return ImageCell(reference=reference)
    if text.lstrip().startswith("["):
        encoded = parse_string_list(text)
        if not encoded:
            raise CellError("empty list of images", "empty_image")
        cell = ImageCell()
        for number, item in enumerate(encoded, start=1):
            try:
                _add_image(cell, item, validate_images, limits)
            except CellError as exc:
                raise CellError(f"image {number} of {len(encoded)}: {exc}", exc.code) from None
        return cell
    cell = ImageCell()
    _add_image(cell, text, validate_images, limits)
    return cell


def _add_image(cell: ImageCell, text: str, validate: bool, limits: ReadLimits) -> None:
    data = decode_base64(text)
    if not validate:
        cell.images.append(data)
        return
    try:
        prepared = prepare_image(data, max_pixels=limits.max_image_pixels)
    except ImageError as exc:
        raise CellError(
            f"base64 does not hold a usable image: {exc}", "image_not_readable"
        ) from None
    cell.images.append(prepared.data)
    cell.infos.append(prepared.info)
    cell.removed.append(prepared.removed)


def decode_base64(text: str) -> bytes:
    """Decode strict base64 (whitespace ignored)."""
    try:
        return pybase64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        # Whitespace is rare, so only pay for the copy that removes it on failure.
        cleaned = _WHITESPACE.sub("", text)
        try:
            return pybase64.b64decode(cleaned, validate=True)
        except (binascii.Error, ValueError):
            raise CellError(
                f"broken base64: {_base64_reason(text, cleaned)}", "image_not_readable"
            ) from None


def decode_image(text: str, *, validate_images: bool = True) -> bytes:
    """Decode strict base64 and, if asked, check it is an image (returned without metadata)."""
    cell = ImageCell()
    _add_image(cell, text, validate_images, ReadLimits())
    return cell.images[0]


def metadata_warnings(row: int, column: str, removed: list[tuple[str, ...]]) -> list[RowWarning]:
    """One `metadata_removed` warning per image that lost metadata segments."""
    several = len(removed) > 1
    return [
        RowWarning(
            row,
            column,
            "metadata_removed",
            (f"image {number}: " if several else "") + ", ".join(segments),
        )
        for number, segments in enumerate(removed, start=1)
        if segments
    ]


def is_formula_like(text: str) -> bool:
    """Whether a spreadsheet would read `text` as a formula (plain numbers are harmless)."""
    return text.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(text.strip())


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


def _base64_reason(text: str, cleaned: str) -> str:
    if text.lstrip().startswith("data:"):
        return "a data: URL prefix is not allowed, the cell must hold plain base64"
    bad = next((char for char in text if not _is_base64_char(char)), None)
    if bad is not None:
        return f"invalid character {bad!r}"
    try:  # the standard library says more precisely what is wrong (padding...)
        base64.b64decode(cleaned, validate=True)
    except (binascii.Error, ValueError) as exc:
        return str(exc)
    return "not valid base64"


def _is_base64_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char in "+/=" or char.isspace())
