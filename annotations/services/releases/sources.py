"""The image bytes a release writes: read from storage, JPEG/PNG untouched, others encoded once."""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import NamedTuple

from django.core.files.storage import FileSystemStorage, default_storage
from pybase64 import b64encode

from annotations.imaging.images import encode_for_vlmeval
from annotations.services.releases.digest_worker import place_image, read_stored_image

# Formats VLMEvalKit and browsers read as they are: written byte for byte, never re-encoded.
PASS_THROUGH = frozenset({"JPEG", "PNG", "MPO"})
EXTENSIONS = {"JPEG": "jpg", "MPO": "jpg", "PNG": "png"}
# Converted images are few (GIF, BMP, TIFF, WEBP); a small cache keeps each one encoded once
# while it is reused nearby, without a structure that grows with the release.
CONVERTED_CACHE = 256


class ImageRef(NamedTuple):
    """What a release needs to know about one stored image, read with the item's chunk."""

    id: int
    file: str
    format: str
    sha256: str
    size: int


class Payload(NamedTuple):
    data: bytes
    # Name in the release's images/ folder: the stored image's sha256 (also for a converted one,
    # so that NAME.json and NAME_coco.json point at it by the hash they know) + extension.
    name: str


def image_bytes(file_name: str) -> bytes:
    """The stored bytes of an image file (straight from disk when storage is local)."""
    if isinstance(default_storage, FileSystemStorage):
        with open(os.path.join(default_storage.location, file_name), "rb") as handle:
            return handle.read()
    with default_storage.open(file_name, "rb") as handle:
        return handle.read()


def _storage_root() -> str | None:
    """The folder of the image storage when it is local, else None."""
    if isinstance(default_storage, FileSystemStorage):
        return default_storage.location
    return None


class Payloads:
    """Image bytes as written into a release, and the images/ folder of its local layout."""

    def __init__(self) -> None:
        self._converted: OrderedDict[int, Payload] = OrderedDict()
        self.files_written = 0
        self.bytes_written = 0
        self.worker = None  # the export's digest worker (`writer.Digester`): see `place`
        self._root = _storage_root()
        # The storage folder with its separator: stored paths are joined once per image per
        # file, so a plain concatenation rather than os.path.join (same result for its
        # relative names).
        self._prefix = os.path.join(self._root, "") if self._root is not None else None

    def _bytes(self, ref: ImageRef) -> bytes:
        if self._root is None:
            return image_bytes(ref.file)
        return read_stored_image(self._prefix + ref.file, ref.size)

    def stored_path(self, ref: ImageRef) -> str | None:
        """The image's file, when the release writes it byte for byte from local storage (so
        the digest worker may write its cell); else None."""
        if self._root is None or ref.format not in PASS_THROUGH or not ref.size:
            return None
        path = self._prefix + ref.file
        return None if "\n" in path else path

    def base64(self, ref: ImageRef) -> bytes:
        """The image's base64 text, as its TSV cell holds it."""
        return b64encode(self.get(ref).data)

    def get(self, ref: ImageRef) -> Payload:
        """The bytes a release writes for an image: a stored JPEG/PNG as it is, read for each
        cell; another format converted once while it is reused nearby (`CONVERTED_CACHE`: the
        local layout's file and the TSV cell take the same conversion)."""
        if ref.format in PASS_THROUGH:
            return Payload(self._bytes(ref), f"{ref.sha256}.{EXTENSIONS[ref.format]}")
        cached = self._converted.get(ref.id)
        if cached is not None:
            self._converted.move_to_end(ref.id)
            return cached
        data = encode_for_vlmeval(self._bytes(ref))
        payload = Payload(data, f"{ref.sha256}.png")
        self._converted[ref.id] = payload
        if len(self._converted) > CONVERTED_CACHE:
            self._converted.popitem(last=False)
        return payload

    @staticmethod
    def name(ref: ImageRef) -> str:
        """The images/ file name of an image."""
        return f"{ref.sha256}.{EXTENSIONS.get(ref.format, 'png')}"

    def place(self, folder: str, ref: ImageRef) -> str:
        """Put the image into `folder` once (named by its sha256) and return its name.

        With a `worker` that has room, a stored file is linked by the worker, on its core, and
        counted there; otherwise here. Converted images are always written here.
        """
        name = self.name(ref)
        target = folder + os.sep + name
        local = self._root is not None and ref.format in PASS_THROUGH
        source = self._prefix + ref.file if local else None
        if source is not None and self.worker is not None and self.worker.has_room():
            self.worker.link(source, target, ref.size)
            return name
        if source is not None:
            if not place_image(source, target):
                return name  # placed for an earlier row: one file per image
            size = ref.size
        else:
            data = self.get(ref).data
            try:
                with open(target, "xb") as out:
                    out.write(data)
            except FileExistsError:
                return name
            size = len(data)
        self.files_written += 1
        self.bytes_written += size
        return name
