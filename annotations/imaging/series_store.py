"""A stored series: de-identified DICOM headers without pixels, beside the volume's chunks.

The pixels are stored once, in the chunks (``imaging.chunks``); the headers keep what a DICOM
SEG or a DICOM export must reference (UIDs, geometry, rescale). ``rebuild_series`` joins them
into a whole de-identified series again when an export needs one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pydicom


def series_headers(folder: Path) -> list[Any]:
    """The header datasets of a stored series, sorted by position along the slice normal
    (the voxel z order)."""
    datasets = [
        pydicom.dcmread(path, stop_before_pixels=True)
        for path in sorted(Path(folder).iterdir())
        if path.suffix == ".dcm"
    ]
    return sorted(datasets, key=along_normal)


def along_normal(ds) -> float:
    row = np.asarray(ds.ImageOrientationPatient[:3], dtype=np.float64)
    column = np.asarray(ds.ImageOrientationPatient[3:], dtype=np.float64)
    position = np.asarray(ds.ImagePositionPatient, dtype=np.float64)
    return float(np.dot(np.cross(row, column), position))


def stored_values(hu: np.ndarray, ds) -> np.ndarray:
    """HU back to the stored values of ``ds``'s encoding (exact for integer rescales)."""
    slope = float(getattr(ds, "RescaleSlope", 1) or 1)
    intercept = float(getattr(ds, "RescaleIntercept", 0) or 0)
    values = np.rint((hu.astype(np.float64) - intercept) / slope)
    signed = int(getattr(ds, "PixelRepresentation", 0)) == 1
    bits = int(getattr(ds, "BitsStored", 16))
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return np.clip(values, low, high).astype(np.int16 if signed else np.uint16)


def with_pixels(headers: Sequence[Any], voxels) -> list[Any]:
    """The ``headers`` (z order) with the pixel data of ``voxels[z]`` (HU) put back."""
    if len(headers) != voxels.shape[0]:
        raise ValueError(f"{len(headers)} headers for {voxels.shape[0]} slices")
    whole = []
    for z, header in enumerate(headers):
        ds = pydicom.Dataset()
        ds.update(header)
        ds.file_meta = header.file_meta
        ds.PixelData = np.ascontiguousarray(stored_values(np.asarray(voxels[z]), ds)).tobytes()
        ds["PixelData"].VR = "OW"
        whole.append(ds)
    return whole


def rebuild_series(folder: Path, voxels, out_dir: Path) -> list[Path]:
    """Write the whole de-identified series (headers of ``folder`` + ``voxels``) to ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ds in with_pixels(series_headers(folder), voxels):
        path = out_dir / f"{ds.SOPInstanceUID}.dcm"
        ds.save_as(path, enforce_file_format=True)
        paths.append(path)
    return paths
