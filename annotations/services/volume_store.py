"""Converting volumes imported before chunks to the stored-once form (``imaging.chunks``).

A volume imported earlier holds its voxels three times: the de-identified DICOM with pixels,
``voxels.npy`` and the viewer's ``voxels.raw.gz``. Converted, it holds chunks and the DICOM
headers only. Each step keeps a readable volume: the chunks are written and checked, the row
points at them, and only then do the old files go.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pydicom
from django.conf import settings
from django.db import transaction

from annotations.imaging import chunks, ct
from annotations.imaging.deid import strip_pixels
from annotations.models import Volume
from annotations.selectors.cases import memmaps

SLAB = 32


@dataclass
class StoreReport:
    converted: int = 0
    bytes_before: int = 0
    bytes_after: int = 0


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def volume_store_once(volume: Volume) -> tuple[int, int]:
    """Convert one volume stored as ``.npy``; returns its bytes on disk before and after.
    A volume already stored as chunks is left alone (0, 0)."""
    media = Path(settings.MEDIA_ROOT)
    old = media / volume.cache_path
    if old.suffix != ".npy":
        return 0, 0
    dicom = media / volume.dicom_path if volume.dicom_path else None
    before = _size(old) + _size(old.with_suffix(".raw.gz")) + (_size(dicom) if dicom else 0)
    voxels = ct.open_voxel_cache(old)
    relative = str(Path(volume.cache_path).parent / "voxels")
    target = media / relative
    slabs = (np.asarray(voxels[z : z + SLAB]) for z in range(0, voxels.shape[0], SLAB))
    chunks.write_chunked_volume(slabs, target)
    if not np.array_equal(np.asarray(chunks.ChunkedVolume(target)), np.asarray(voxels)):
        shutil.rmtree(target, ignore_errors=True)
        raise ValueError(f"volume {volume.pk}: the chunks do not read back as its voxels")
    with transaction.atomic():
        Volume.objects.filter(pk=volume.pk).update(cache_path=relative)
        transaction.on_commit(lambda: _remove_old(old, dicom))
    volume.cache_path = relative
    after = _size(target) + (_size(dicom) if dicom else 0)
    return before, after


def _remove_old(old: Path, dicom: Path | None) -> None:
    memmaps.clear()
    old.unlink(missing_ok=True)
    old.with_suffix(".raw.gz").unlink(missing_ok=True)
    shutil.rmtree(old.parent / "chunks", ignore_errors=True)  # chunks made for the viewer
    if dicom is not None and dicom.is_dir():
        for path in dicom.iterdir():
            ds = pydicom.dcmread(path)
            if "PixelData" in ds:
                strip_pixels(ds)
                ds.save_as(path, enforce_file_format=True)


def volumes_store_once() -> StoreReport:
    """Convert every volume still stored as ``.npy`` (idempotent: run it again after a stop)."""
    report = StoreReport()
    for volume in Volume.objects.filter(cache_path__endswith=".npy").order_by("pk").iterator():
        before, after = volume_store_once(volume)
        report.converted += 1
        report.bytes_before += before
        report.bytes_after += after
    return report
