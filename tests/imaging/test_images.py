from __future__ import annotations

import io

import pytest
from PIL import Image

from annotations.imaging.images import (
    ImageError,
    encode_for_vlmeval,
    inspect_image,
    sha256_hex,
)
from tests.formats.builders import jpeg_bytes, png_bytes, png_claiming_size


def _encoded(mode: str, image_format: str) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, (20, 10)).save(buffer, format=image_format)
    return buffer.getvalue()


def test_it_describes_a_jpeg_and_a_png():
    info = inspect_image(jpeg_bytes())
    assert (info.format, info.width, info.height, info.mode) == ("JPEG", 32, 24, "RGB")
    info = inspect_image(png_bytes(size=(7, 5)))
    assert (info.format, info.width, info.height, info.mode) == ("PNG", 7, 5, "RGBA")


def test_it_rejects_bytes_that_are_not_an_image():
    with pytest.raises(ImageError, match="not an image"):
        inspect_image(b"%PDF-1.4 definitely not pixels")


def test_it_rejects_empty_bytes():
    with pytest.raises(ImageError, match="not an image"):
        inspect_image(b"")


def test_it_rejects_a_truncated_jpeg():
    buffer = io.BytesIO()
    Image.effect_noise((128, 128), 60).convert("RGB").save(buffer, format="JPEG")
    data = buffer.getvalue()
    with pytest.raises(ImageError, match="cannot be decoded"):
        inspect_image(data[: len(data) // 2])


def test_it_rejects_a_truncated_png():
    buffer = io.BytesIO()
    Image.effect_noise((128, 128), 60).save(buffer, format="PNG")
    data = buffer.getvalue()
    with pytest.raises(ImageError, match="cannot be decoded"):
        inspect_image(data[: len(data) // 2])


def test_it_rejects_a_png_claiming_huge_dimensions_as_a_bomb():
    with pytest.raises(ImageError, match="decompression bomb"):
        inspect_image(png_claiming_size(100_000, 100_000))


def test_it_treats_pillows_bomb_warning_zone_as_an_error():
    # Just above Pillow's limit Pillow only warns; we refuse.
    side = int(Image.MAX_IMAGE_PIXELS**0.5) + 10
    with pytest.raises(ImageError, match="decompression bomb"):
        inspect_image(png_claiming_size(side, side))


def test_it_enforces_a_lower_pixel_limit():
    data = jpeg_bytes(size=(32, 24))
    assert inspect_image(data, max_pixels=32 * 24).width == 32
    with pytest.raises(ImageError, match="exceeds the limit of 100"):
        inspect_image(data, max_pixels=100)


def test_it_refuses_formats_outside_the_safe_list():
    eps = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n"
    with pytest.raises(ImageError, match="not an image"):
        inspect_image(eps)


def test_sha256_hex_is_the_content_hash():
    assert sha256_hex(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_encode_for_vlmeval_passes_jpeg_and_png_through_byte_for_byte():
    jpeg, png = jpeg_bytes(), png_bytes()
    assert encode_for_vlmeval(jpeg) is jpeg
    assert encode_for_vlmeval(png) is png


@pytest.mark.parametrize(("mode", "image_format"), [("RGB", "BMP"), ("CMYK", "TIFF"), ("P", "GIF")])
def test_encode_for_vlmeval_turns_other_formats_into_png(mode: str, image_format: str):
    source = _encoded(mode, image_format)
    converted = encode_for_vlmeval(source)
    info = inspect_image(converted)
    assert (info.format, info.width, info.height) == ("PNG", 20, 10)


def test_encode_for_vlmeval_rejects_a_broken_image():
    with pytest.raises(ImageError):
        encode_for_vlmeval(jpeg_bytes()[:100])
