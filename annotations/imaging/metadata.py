"""Removing metadata from JPEG and PNG files without touching their pixels.

Cameras and endoscopy towers write patient names, record numbers, dates and device serials
into EXIF, XMP, IPTC and comment segments (JPEG) or text chunks (PNG). These functions walk
the file's segments or chunks and copy every byte that decoding needs, unchanged, leaving the
others out: the compressed pixel data is never decoded or re-encoded, so the pixels decode
identically, and a file that carries no metadata comes back as the very same bytes.

The JPEG walk also checks the file's structure (every segment whole, the compressed data
ending in EOI), which is how an import validates JPEG without decoding it. Text burned into
the pixels is out of reach here.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

JPEG_SIGNATURE = b"\xff\xd8"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# APPn segments that decoding needs (colour), identified by their first bytes; every other
# APPn (EXIF, XMP, IPTC/Photoshop, MPF, vendor blocks) and every comment is left out.
_KEPT_APP_SEGMENTS = {
    0xE0: b"JFIF\x00",
    0xE2: b"ICC_PROFILE\x00",
    0xEE: b"Adobe",
}
_APP_NAMES = (
    (b"Exif\x00", "EXIF"),
    (b"http://ns.adobe.com/xap/", "XMP"),
    (b"http://ns.adobe.com/xmp/", "XMP"),
    (b"Photoshop 3.0\x00", "IPTC/Photoshop"),
    (b"JFXX\x00", "JFIF thumbnail"),
    (b"MPF\x00", "MPF"),
)
# Huffman-coded frames browsers and VLMEvalKit's PIL decode: baseline, extended, progressive.
_SUPPORTED_FRAMES = {0xC0: "baseline", 0xC1: "extended", 0xC2: "progressive"}
_OTHER_FRAMES = frozenset({0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})
# In compressed data, 0xFF is followed by 0x00 (a stuffed byte), a restart marker or more
# 0xFF fill: anything else starts the next segment.
_NEXT_MARKER = re.compile(rb"\xff[\x01-\xcf\xd8-\xfe]")

# Ancillary PNG chunks that affect how pixels look (transparency, colour, size, animation);
# text (tEXt, zTXt, iTXt), EXIF (eXIf), time (tIME) and private chunks are left out.
_KEPT_PNG_CHUNKS = frozenset(
    {
        b"tRNS",
        b"cHRM",
        b"gAMA",
        b"iCCP",
        b"sBIT",
        b"sRGB",
        b"cICP",
        b"mDCV",
        b"cLLI",
        b"bKGD",
        b"hIST",
        b"pHYs",
        b"sPLT",
        b"acTL",
        b"fcTL",
        b"fdAT",
    }
)


class MetadataError(ValueError):
    """The file's segments or chunks are malformed (truncated, or not JPEG/PNG at all)."""


@dataclass(frozen=True)
class Stripped:
    """A file without its metadata; `removed` names what was left out, in file order.
    `components` is the JPEG frame's number of colour components (0 for PNG)."""

    data: bytes
    removed: tuple[str, ...]
    width: int
    height: int
    components: int = 0


def strip_jpeg(data: bytes) -> Stripped:
    """Leave out EXIF, XMP, IPTC, comments and other APPn; check the structure to EOI."""
    if not data.startswith(JPEG_SIGNATURE):
        raise MetadataError("not a JPEG file")
    walk = _JpegWalk(data)
    walk.run()
    kept = data if not walk.removed else b"".join(walk.kept)
    return Stripped(kept, tuple(walk.removed), walk.width, walk.height, walk.components)


class _JpegWalk:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.kept: list[memoryview | bytes] = [JPEG_SIGNATURE]
        self.removed: list[str] = []
        self.width = self.height = self.components = 0
        self._view = memoryview(data)

    def run(self) -> None:
        position = 2
        while True:
            marker, start, position = self._marker_at(position)
            if marker == 0xD9:  # EOI
                self.kept.append(b"\xff\xd9")
                if position < len(self.data):
                    self.removed.append(f"{len(self.data) - position} bytes after the image end")
                if not self.width:
                    raise MetadataError("JPEG has no frame header")
                return
            if marker in _STANDALONE:
                self.kept.append(self._view[start:position])
                continue
            end = self._segment_end(position)
            self._segment(marker, start, position, end)
            position = self._scan_end(end) if marker == 0xDA else end

    def _marker_at(self, position: int) -> tuple[int, int, int]:
        data = self.data
        if position >= len(data):
            raise MetadataError("truncated JPEG: the image end (EOI) is missing")
        if data[position] != 0xFF:
            raise MetadataError(f"JPEG segment expected at byte {position}")
        start = position
        while position < len(data) and data[position] == 0xFF:
            position += 1  # fill bytes
        if position >= len(data):
            raise MetadataError("truncated JPEG: the image end (EOI) is missing")
        return data[position], start, position + 1

    def _segment_end(self, position: int) -> int:
        if position + 2 > len(self.data):
            raise MetadataError("truncated JPEG segment")
        (length,) = struct.unpack_from(">H", self.data, position)
        end = position + length
        if length < 2 or end > len(self.data):
            raise MetadataError("truncated JPEG segment")
        return end

    def _segment(self, marker: int, start: int, payload: int, end: int) -> None:
        body = self._view[payload + 2 : end]
        if 0xE0 <= marker <= 0xEF:
            wanted = _KEPT_APP_SEGMENTS.get(marker)
            if wanted is None or bytes(body[: len(wanted)]) != wanted:
                self.removed.append(_app_name(marker, bytes(body[:32])))
                return
        elif marker == 0xFE:
            self.removed.append("COM (comment)")
            return
        elif marker in _OTHER_FRAMES:
            raise MetadataError(f"JPEG coding SOF{marker - 0xC0} is not supported")
        elif marker in _SUPPORTED_FRAMES:
            self._frame(body)
        self.kept.append(self._view[start:end])

    def _frame(self, body: memoryview) -> None:
        if len(body) < 6:
            raise MetadataError("truncated JPEG frame header")
        precision, height, width, components = struct.unpack_from(">BHHB", body)
        if precision != 8:
            raise MetadataError(f"{precision}-bit JPEG is not supported (browsers read 8-bit)")
        if not width or not height:
            raise MetadataError("JPEG frame without a width or height")
        self.width, self.height, self.components = width, height, components

    def _scan_end(self, position: int) -> int:
        found = _NEXT_MARKER.search(self.data, position)
        if found is None:
            raise MetadataError("truncated JPEG: the image end (EOI) is missing")
        self.kept.append(self._view[position : found.start()])
        return found.start()


def _app_name(marker: int, head: bytes) -> str:
    for prefix, name in _APP_NAMES:
        if head.startswith(prefix):
            return f"APP{marker - 0xE0} {name}"
    return f"APP{marker - 0xE0}"


def strip_png(data: bytes) -> Stripped:
    """Leave out tEXt, zTXt, iTXt, eXIf, tIME and private chunks; keep what drawing needs."""
    if not data.startswith(PNG_SIGNATURE):
        raise MetadataError("not a PNG file")
    view = memoryview(data)
    kept: list[memoryview | bytes] = [PNG_SIGNATURE]
    removed: list[str] = []
    width = height = 0
    position = len(PNG_SIGNATURE)
    while True:
        if position + 8 > len(data):
            raise MetadataError("truncated PNG: the image end (IEND) is missing")
        length, kind = struct.unpack_from(">I4s", data, position)
        end = position + 12 + length
        if end > len(data):
            raise MetadataError(f"truncated PNG chunk {kind!r}")
        if kind == b"IHDR" and length >= 8:
            width, height = struct.unpack_from(">II", data, position + 8)
        if _is_critical(kind) or kind in _KEPT_PNG_CHUNKS:
            kept.append(view[position:end])
        else:
            removed.append(kind.decode("latin-1"))
        position = end
        if kind == b"IEND":
            break
    if not width or not height:
        raise MetadataError("PNG has no image header")
    if position < len(data):
        removed.append(f"{len(data) - position} bytes after the image end")
    if not removed:
        return Stripped(data, (), width, height)
    return Stripped(b"".join(kept), tuple(removed), width, height)


def _is_critical(kind: bytes) -> bool:
    # The case of a chunk type's first letter says whether a decoder may skip it.
    return bool(kind) and 0x41 <= kind[0] <= 0x5A
