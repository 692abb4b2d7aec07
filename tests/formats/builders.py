"""Small generated images and TSV files for the format tests."""

from __future__ import annotations

import base64
import io
import struct
import zlib
from pathlib import Path

from PIL import Image


def jpeg_bytes(color: str = "red", size: tuple[int, int] = (32, 24)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="JPEG")
    return buffer.getvalue()


def png_bytes(color: str = "blue", size: tuple[int, int] = (32, 24)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGBA", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def png_claiming_size(width: int, height: int) -> bytes:
    """A PNG whose header claims `width` x `height` (a decompression bomb's signature)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        body = kind + payload
        return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00" * 16)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def quoted(cell: str) -> str:
    return '"' + cell.replace('"', '""') + '"'


def tsv_text(rows: list[list[str]], *, quote_all: bool = True) -> str:
    """Join rows into TSV text; with quote_all every cell is quoted like VLMEvalKit writes."""
    render = quoted if quote_all else str
    return "".join("\t".join(render(cell) for cell in row) + "\n" for row in rows)


def write_tsv(path: Path, rows: list[list[str]], *, quote_all: bool = True) -> Path:
    path.write_bytes(tsv_text(rows, quote_all=quote_all).encode("utf-8"))
    return path


MCQ_HEADER = ["index", "image", "question", "A", "B", "C", "D", "answer", "category"]


def mcq_row(
    index: int, image: str, *, answer: str = "A", question: str = "What is shown?"
) -> list[str]:
    return [str(index), image, question, "polyp", "ulcer", "bleeding", "", answer, "lesion"]


# What a camera or an endoscopy tower may write into an image's metadata.
PHI_TEXT = "PATIENT DOE^JANE MRN 99887766"


def _phi_exif() -> Image.Exif:
    exif = Image.Exif()
    exif[0x010E] = PHI_TEXT  # ImageDescription
    exif[0x013B] = "DOE^JANE"  # Artist
    return exif


def jpeg_with_metadata(size: tuple[int, int] = (64, 48)) -> bytes:
    """A JPEG with EXIF, XMP and a comment that all name the patient, and an ICC profile."""
    image = Image.effect_noise(size, 40).convert("RGB")
    xmp = f'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:Description>{PHI_TEXT}</rdf:Description></x:xmpmeta>'
    buffer = io.BytesIO()
    image.save(
        buffer,
        format="JPEG",
        exif=_phi_exif(),
        xmp=xmp.encode(),
        comment=PHI_TEXT.encode(),
        icc_profile=_srgb_profile(),
    )
    return buffer.getvalue()


def png_with_metadata(size: tuple[int, int] = (40, 30)) -> bytes:
    """A PNG with tEXt, iTXt and eXIf chunks naming the patient, and a gAMA chunk."""
    from PIL import PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", PHI_TEXT)
    info.add_itxt("Description", PHI_TEXT, lang="en")
    info.add(b"gAMA", struct.pack(">I", 45455))
    buffer = io.BytesIO()
    Image.effect_noise(size, 40).convert("RGB").save(
        buffer, format="PNG", pnginfo=info, exif=_phi_exif()
    )
    return buffer.getvalue()


def _srgb_profile() -> bytes:
    from PIL import ImageCms

    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
