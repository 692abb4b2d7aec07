"""Storing image bytes once, by content hash; and the image files of an import in progress.

An import stages its images in a folder of its own (MEDIA_ROOT/imports/KEY/) while it reads the
file, outside any transaction; in its short final transaction it links them into their
content-addressed place and inserts their rows (`staged_images_commit`). A failed or killed
attempt is undone by `staged_images_discard`: its folder goes, and so does any file it placed
whose row never committed. Placing and removing files happen under one lock (and only in a
transaction that also checks the rows), so a file another import uses is never removed: a file
without a committed row belongs to nobody, and every import holds its own link to each image.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection, transaction

from annotations.imaging.images import ImageInfo, PreparedImage, inspect_image
from annotations.models import Image
from annotations.models.imaging import image_upload_path

IMPORTS_FOLDER = "imports"
_QUERY_CHUNK = 900  # below SQLite's 999 parameters
# Any constant shared by the writers of image files (pg_advisory_xact_lock takes a bigint).
_IMAGE_FILES_LOCK = 0x636C696E696D67


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
    name = image_upload_path(image, "")
    if not default_storage.exists(name):
        # Storage may not rename: the name is the hash, so an existing file already holds these bytes.
        default_storage.save(name, ContentFile(data))
    image.file.name = name
    image.save()
    return image, True


def image_bytes(image: Image) -> bytes:
    if not image.file.name:
        raise FileNotFoundError(f"image {image.pk} has no stored file")
    with default_storage.open(image.file.name, "rb") as handle:
        return handle.read()


def import_work_dir(key: str) -> Path:
    """The staging folder of one import (a job's, so that its next attempt finds it)."""
    return Path(settings.MEDIA_ROOT) / IMPORTS_FOLDER / key


@dataclass(frozen=True)
class _Staged:
    name: str  # relative to MEDIA_ROOT, where the file lives once committed
    format: str
    width: int
    height: int
    size: int


class ImageStaging:
    """The images of one import attempt, staged until its rows are committed."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.media = Path(settings.MEDIA_ROOT)
        folder.mkdir(parents=True, exist_ok=True)
        self._staged: dict[str, _Staged] = {}

    def add(self, image: PreparedImage) -> str:
        """Stage the image (a link when its file already exists); return its sha256."""
        digest = hashlib.sha256(image.data).hexdigest()
        if digest in self._staged:
            return digest
        info = image.info
        row = Image(sha256=digest, format=info.format)
        name = image_upload_path(row, "")
        staged = self.folder / _staged_name(name)
        try:
            os.link(self.media / name, staged)  # the same content is stored: hold on to it
        except FileNotFoundError:
            with open(staged, "wb") as out:
                out.write(image.data)
        except FileExistsError:
            pass
        self._staged[digest] = _Staged(name, info.format, info.width, info.height, len(image.data))
        return digest

    def described(self) -> dict[str, dict]:
        """The staged images as JSON (sha -> what `restage` needs), for a chunk's result."""
        return {digest: asdict(staged) for digest, staged in self._staged.items()}

    def restage(self, described: dict[str, dict]) -> None:
        """Take on images staged in this folder by another process (`described`)."""
        for digest, fields in described.items():
            self._staged[digest] = _Staged(**fields)

    def commit(self) -> dict[str, int]:
        """Inside the import's transaction: rows and files for every staged image; sha -> id."""
        _lock_image_files()
        ids = _image_ids(self._staged)
        new = [digest for digest in self._staged if digest not in ids]
        for digest in new:
            staged = self._staged[digest]
            _link_or_copy(self.folder / _staged_name(staged.name), self.media / staged.name)
        Image.objects.bulk_create(
            (_image_row(digest, self._staged[digest]) for digest in new),
            batch_size=_QUERY_CHUNK,
            ignore_conflicts=True,
        )
        ids.update(_image_ids(new))
        return ids

    def remove(self) -> None:
        """After the commit: the staged links are no longer needed."""
        shutil.rmtree(self.folder, ignore_errors=True)


def staged_images_discard(folder: Path) -> int:
    """Undo a failed or dead import attempt's files; returns how many placed files went.

    The folder goes, and each file the attempt may have placed whose row never committed.
    """
    if not folder.is_dir():
        return 0
    staged = {
        path.name.rsplit(_SEPARATOR, 1)[-1].split(".", 1)[0]: _media_name(path.name)
        for path in folder.iterdir()
        if path.is_file()
    }
    media = Path(settings.MEDIA_ROOT)
    removed = 0
    with transaction.atomic():
        _lock_image_files()
        stored = _image_ids(staged)
        for digest, name in staged.items():
            placed = media / name
            if digest not in stored and placed.is_file():
                placed.unlink()
                removed += 1
    shutil.rmtree(folder, ignore_errors=True)
    return removed


# Staged files lie flat in the import's folder (one folder, cheap to remove), named after the
# place they will take in MEDIA_ROOT with "/" written as "~".
_SEPARATOR = "~"


def _staged_name(media_name: str) -> str:
    return media_name.replace("/", _SEPARATOR)


def _media_name(staged_name: str) -> str:
    return staged_name.replace(_SEPARATOR, "/")


def _lock_image_files() -> None:
    # Serialises placing and removing image files between imports, for the transaction.
    # SQLite needs nothing more: its transactions are IMMEDIATE, so writers take turns.
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_IMAGE_FILES_LOCK])


def _image_ids(digests: Iterable[str]) -> dict[str, int]:
    digests = list(digests)
    ids: dict[str, int] = {}
    for start in range(0, len(digests), _QUERY_CHUNK):
        chunk = digests[start : start + _QUERY_CHUNK]
        ids.update(Image.objects.filter(sha256__in=chunk).values_list("sha256", "id"))
    return ids


def _image_row(digest: str, staged: _Staged) -> Image:
    return Image(
        sha256=digest,
        file=staged.name,
        format=staged.format,
        width=staged.width,
        height=staged.height,
        size_bytes=staged.size,
    )


def _link_or_copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except FileExistsError:
        pass  # named by its hash: the same bytes are there already
    except OSError:  # a file system without hard links
        temporary = target.with_name(f".{target.name}.partial")
        shutil.copyfile(source, temporary)
        os.replace(temporary, target)
