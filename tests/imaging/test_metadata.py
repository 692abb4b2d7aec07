"""Metadata leaves JPEG and PNG files losslessly: the pixels decode identically afterwards."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from annotations.imaging.images import ImageError, prepare_image
from annotations.imaging.metadata import MetadataError, strip_jpeg, strip_png
from tests.formats.builders import (
    PHI_TEXT,
    jpeg_bytes,
    jpeg_with_metadata,
    png_bytes,
    png_with_metadata,
)


def pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGBA"))


def leaks(data: bytes) -> bool:
    return any(word in data for word in (b"DOE", b"99887766", PHI_TEXT.encode()))


def test_a_jpeg_loses_exif_xmp_and_comment_and_keeps_its_pixels_and_colour_profile():
    original = jpeg_with_metadata()
    assert leaks(original)

    stripped = strip_jpeg(original)

    assert stripped.removed == ("APP1 EXIF", "APP1 XMP", "COM (comment)")
    assert not leaks(stripped.data)
    assert np.array_equal(pixels(stripped.data), pixels(original))
    with Image.open(io.BytesIO(stripped.data)) as image:
        assert image.info.get("icc_profile")  # APP2 ICC is what colour needs: kept
        assert not image.getexif() and "comment" not in image.info and "xmp" not in image.info
    assert (stripped.width, stripped.height) == (64, 48)


def test_a_png_loses_its_text_and_exif_chunks_and_keeps_its_pixels_and_gamma():
    original = png_with_metadata()
    assert leaks(original)

    stripped = strip_png(original)

    assert stripped.removed == ("tEXt", "iTXt", "eXIf")
    assert not leaks(stripped.data)
    assert np.array_equal(pixels(stripped.data), pixels(original))
    with Image.open(io.BytesIO(stripped.data)) as image:
        assert image.info["gamma"] == pytest.approx(0.45455)
        assert not image.text


@pytest.mark.parametrize(
    ("strip", "data"), [(strip_jpeg, jpeg_bytes()), (strip_png, png_bytes())], ids=["jpeg", "png"]
)
def test_an_image_without_metadata_comes_back_byte_for_byte(strip, data):
    stripped = strip(data)
    assert stripped.data is data and stripped.removed == ()


def test_a_progressive_jpeg_with_restart_markers_keeps_every_scan():
    buffer = io.BytesIO()
    Image.effect_noise((200, 120), 50).convert("RGB").save(
        buffer, format="JPEG", progressive=True, comment=b"DOE"
    )
    original = buffer.getvalue()
    # Restart markers inside the compressed data must not be read as segments.
    restart = io.BytesIO()
    Image.effect_noise((200, 120), 50).convert("RGB").save(
        restart, format="JPEG", restart_marker_blocks=1
    )

    for data in (original, restart.getvalue()):
        stripped = strip_jpeg(data)
        assert np.array_equal(pixels(stripped.data), pixels(data))
    assert strip_jpeg(original).removed == ("COM (comment)",)


def test_bytes_after_the_image_end_are_left_out():
    data = jpeg_bytes() + b"PATIENT DOE"
    stripped = strip_jpeg(data)
    assert stripped.removed == ("11 bytes after the image end",)
    assert stripped.data == jpeg_bytes()
    png = png_bytes() + b"DOE^JANE"
    assert strip_png(png).data == png_bytes()


def test_a_text_chunk_after_the_pixels_is_left_out_too():
    original = png_bytes()
    end = original.rindex(b"IEND") - 4
    chunk = _png_chunk(b"tEXt", b"Author\x00DOE^JANE")
    data = original[:end] + chunk + original[end:]
    stripped = strip_png(data)
    assert stripped.removed == ("tEXt",) and stripped.data == original


@pytest.mark.parametrize(
    ("strip", "data", "reason"),
    [
        (strip_jpeg, jpeg_bytes()[:200], "truncated"),
        (strip_jpeg, jpeg_bytes()[:-2], "EOI"),
        (strip_png, png_bytes()[:40], "truncated"),
        (strip_jpeg, b"GIF89a....", "not a JPEG"),
        (strip_png, b"GIF89a....", "not a PNG"),
    ],
)
def test_a_malformed_file_is_refused(strip, data, reason):
    with pytest.raises(MetadataError, match=reason):
        strip(data)


def test_twelve_bit_and_lossless_jpeg_are_refused_as_browsers_cannot_show_them():
    data = bytearray(jpeg_bytes())
    frame = data.index(b"\xff\xc0")
    data[frame + 4] = 12
    with pytest.raises(MetadataError, match="12-bit"):
        strip_jpeg(bytes(data))
    data[frame + 4] = 8
    data[frame + 1] = 0xC3
    with pytest.raises(MetadataError, match="SOF3"):
        strip_jpeg(bytes(data))


def test_prepare_image_checks_and_strips_in_one_pass():
    prepared = prepare_image(jpeg_with_metadata())
    assert prepared.info.format == "JPEG" and (prepared.info.width, prepared.info.height) == (
        64,
        48,
    )
    assert prepared.removed == ("APP1 EXIF", "APP1 XMP", "COM (comment)")
    assert not leaks(prepared.data)


def test_prepare_image_refuses_what_inspection_refuses():
    with pytest.raises(ImageError, match="cannot be decoded"):
        prepare_image(jpeg_bytes()[:-2])
    with pytest.raises(ImageError, match="not an image"):
        prepare_image(b"%PDF-1.4")
    with pytest.raises(ImageError, match="exceeds the limit of 100"):
        prepare_image(jpeg_bytes(size=(32, 24)), max_pixels=100)


def test_prepare_image_stores_other_formats_as_png_of_the_same_pixels():
    buffer = io.BytesIO()
    Image.effect_noise((20, 10), 40).convert("P").save(buffer, format="GIF", comment=b"DOE^JANE")
    prepared = prepare_image(buffer.getvalue())
    assert prepared.info.format == "PNG" and prepared.removed == ("stored as PNG (was GIF)",)
    assert not leaks(prepared.data)
    assert np.array_equal(pixels(prepared.data), pixels(buffer.getvalue()))


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    import struct
    import zlib

    body = kind + payload
    return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body))
