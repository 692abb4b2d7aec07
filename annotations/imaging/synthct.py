"""Synthetic CT: a real DICOM series writer and a gastric-cancer-like abdomen phantom.

Used by demo data and tests. The writer stores HU as unsigned 16-bit values with
RescaleSlope 1 / RescaleIntercept -1024 (the usual scanner convention), so HU below -1024 is
clipped to -1024.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pydicom
from pydicom.dataset import Dataset, FileMetaDataset
from pydicom.uid import PYDICOM_IMPLEMENTATION_UID, CTImageStorage, ExplicitVRLittleEndian
from pydicom.valuerep import format_number_as_ds

from annotations.imaging.geometry import IDENTITY_DIRECTION
from annotations.imaging.modalities import CT_PHASES

PHASES = CT_PHASES
RESCALE_INTERCEPT = -1024
STORED_MAX = 65535

Grid = tuple[np.ndarray, np.ndarray, np.ndarray]  # broadcastable z, y, x coordinates


def write_synthetic_series(
    out_dir: Path,
    hu: np.ndarray,
    *,
    spacing: Sequence[float],
    origin: Sequence[float],
    direction: Sequence[float] = IDENTITY_DIRECTION,
    phase: str,
    patient_name: str = "",
    patient_id: str = "",
    study_uid: str | None = None,
    shuffle_names: bool = False,
    extra_tags: dict[str, Any] | None = None,
) -> list[Path]:
    """Write ``hu`` (z, y, x) as a CT Image Storage series, one file per slice; return the paths.

    ``direction`` is row-major 3×3 whose columns are the x, y and slice axes; it must be a
    proper rotation (det +1) so that the slice axis is the normal DICOM readers compute.
    Slice k lies at ``origin + k·sz·(slice axis)``. ``shuffle_names`` gives the files random
    names so that readers cannot rely on file order. ``extra_tags`` (keyword → value) is set on
    every slice.
    """
    volume = np.asarray(hu)
    if volume.ndim != 3:
        raise ValueError(f"hu must be a (z, y, x) array, got shape {volume.shape}")
    return write_synthetic_series_slabs(
        out_dir,
        volume.shape,
        [volume],
        spacing=spacing,
        origin=origin,
        direction=direction,
        phase=phase,
        patient_name=patient_name,
        patient_id=patient_id,
        study_uid=study_uid,
        shuffle_names=shuffle_names,
        extra_tags=extra_tags,
    )


def write_synthetic_series_slabs(
    out_dir: Path,
    shape: Sequence[int],
    slabs: Iterable[np.ndarray],
    *,
    spacing: Sequence[float],
    origin: Sequence[float],
    direction: Sequence[float] = IDENTITY_DIRECTION,
    phase: str,
    patient_name: str = "",
    patient_id: str = "",
    study_uid: str | None = None,
    shuffle_names: bool = False,
    extra_tags: dict[str, Any] | None = None,
) -> list[Path]:
    """`write_synthetic_series` of a volume of ``shape`` given as consecutive HU slabs
    (each (k, y, x), together ``shape[0]`` slices), so that no more than a slab is in memory."""
    shape = tuple(int(n) for n in shape)
    axes = _checked_rotation(direction)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    shared = _series_dataset(
        shape, spacing, axes, phase, patient_name, patient_id, study_uid, extra_tags
    )
    names = _file_names(shape[0], shuffle_names)
    paths: list[Path] = []
    for slab in slabs:
        if slab.ndim != 3 or slab.shape[1:] != shape[1:] or len(paths) + len(slab) > shape[0]:
            raise ValueError(f"slab of shape {slab.shape} does not fit a volume of {shape}")
        stored = np.clip(slab, RESCALE_INTERCEPT, STORED_MAX + RESCALE_INTERCEPT)
        stored = (stored - RESCALE_INTERCEPT).astype(np.uint16)
        for pixels in stored:
            k = len(paths)
            position = np.asarray(origin, dtype=np.float64) + axes[:, 2] * (k * float(spacing[2]))
            path = out_dir / names[k]
            _slice_dataset(shared, pixels, position, k).save_as(path, enforce_file_format=True)
            paths.append(path)
    if len(paths) != shape[0]:
        raise ValueError(f"the slabs held {len(paths)} slices, the shape says {shape[0]}")
    return paths


def _checked_rotation(direction: Sequence[float]) -> np.ndarray:
    axes = np.asarray(direction, dtype=np.float64).reshape(3, 3)
    if not np.allclose(axes.T @ axes, np.eye(3), atol=1e-6) or np.linalg.det(axes) < 0:
        raise ValueError("direction must be a proper rotation (orthonormal, determinant +1)")
    return axes


def _ds_list(values: Sequence[float] | np.ndarray) -> list[str]:
    return [format_number_as_ds(float(v)) for v in values]


def _series_dataset(
    shape: tuple[int, ...],
    spacing: Sequence[float],
    axes: np.ndarray,
    phase: str,
    patient_name: str,
    patient_id: str,
    study_uid: str | None,
    extra_tags: dict[str, Any] | None,
) -> Dataset:
    ds = Dataset()
    ds.SOPClassUID = CTImageStorage
    ds.Modality = "CT"
    ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
    ds.PatientName = patient_name
    ds.PatientID = patient_id
    ds.StudyInstanceUID = study_uid or pydicom.uid.generate_uid()
    ds.SeriesInstanceUID = pydicom.uid.generate_uid()
    ds.FrameOfReferenceUID = pydicom.uid.generate_uid()
    ds.SeriesDescription = phase
    ds.SeriesNumber = PHASES.index(phase) + 1 if phase in PHASES else 99
    ds.ImageOrientationPatient = _ds_list([*axes[:, 0], *axes[:, 1]])
    ds.PixelSpacing = _ds_list([spacing[1], spacing[0]])  # DICOM order: row gap, column gap
    ds.SliceThickness = format_number_as_ds(float(spacing[2]))
    ds.Rows, ds.Columns = int(shape[1]), int(shape[2])
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.BitsAllocated, ds.BitsStored, ds.HighBit = 16, 16, 15
    ds.PixelRepresentation = 0
    ds.RescaleIntercept = str(RESCALE_INTERCEPT)
    ds.RescaleSlope = "1"
    ds.RescaleType = "HU"
    ds.WindowCenter, ds.WindowWidth = "40", "400"
    for keyword, value in (extra_tags or {}).items():
        setattr(ds, keyword, value)
    return ds


def _slice_dataset(shared: Dataset, pixels: np.ndarray, position: np.ndarray, k: int) -> Dataset:
    ds = Dataset()
    ds.update(shared)
    ds.SOPInstanceUID = pydicom.uid.generate_uid()
    ds.InstanceNumber = k + 1
    ds.ImagePositionPatient = _ds_list(position)
    ds.PixelData = np.ascontiguousarray(pixels).tobytes()
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = CTImageStorage
    meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    meta.ImplementationClassUID = PYDICOM_IMPLEMENTATION_UID
    ds.file_meta = meta
    return ds


def _file_names(count: int, shuffle: bool) -> list[str]:
    if not shuffle:
        return [f"slice_{k:04d}.dcm" for k in range(count)]
    # Random but unique names whose sort order has nothing to do with the slice order.
    rng = random.Random()
    tokens = rng.sample(range(10**6, 10**7), count)
    return [f"IM{token}" for token in tokens]


# --- abdomen phantom ---------------------------------------------------------------------------

# HU by structure and phase: (non_contrast, arterial, venous, delayed). Arterial lights up the
# aorta and renal cortex, venous the liver and portal veins, delayed leaves a mild plateau.
_ENHANCEMENT: dict[str, tuple[int, int, int, int]] = {
    "fat": (-100, -100, -100, -100),
    "muscle": (40, 45, 55, 50),
    "liver": (55, 70, 120, 90),
    "portal_vein": (45, 120, 180, 120),
    "aorta": (40, 300, 160, 110),
    "kidney": (30, 190, 160, 120),
    "stomach_wall": (35, 80, 90, 70),
    "tumor": (40, 95, 115, 100),
    "node": (45, 70, 90, 80),
}


@dataclass(frozen=True)
class _Blob:
    """An axis-aligned ellipsoid in voxel units: centre (x, y, z) and radii (x, y, z)."""

    centre: tuple[float, float, float]
    radii: tuple[float, float, float]

    def mask(self, grid: Grid) -> np.ndarray:
        zz, yy, xx = grid
        cx, cy, cz = self.centre
        rx, ry, rz = self.radii
        return ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 + ((zz - cz) / rz) ** 2 <= 1.0


@dataclass(frozen=True)
class _Layout:
    stomach: _Blob
    tumor: _Blob
    nodes: tuple[_Blob, ...]
    liver: _Blob


def _layout(shape: Sequence[int], seed: int) -> _Layout:
    # Only the seed moves anatomy: all four phases of one patient share the same layout.
    z, y, x = (float(n) for n in shape)
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(-1.0, 1.0, size=8)
    stomach = _Blob(
        (x * (0.64 + 0.02 * jitter[0]), y * 0.40, z * 0.45), (x * 0.14, y * 0.12, z * 0.32)
    )
    angle = np.pi * (0.75 + 0.25 * jitter[1])  # tumor on the greater-curvature side
    tumor_centre = (
        stomach.centre[0] + stomach.radii[0] * np.cos(angle) * 0.95,
        stomach.centre[1] - stomach.radii[1] * np.sin(angle) * 0.95,
        stomach.centre[2] + z * 0.08 * jitter[2],
    )
    tumor = _Blob(tumor_centre, (x * 0.045, y * 0.045, max(z * 0.10, 1.5)))
    nodes = tuple(
        _Blob(
            (
                stomach.centre[0] + x * (0.05 + 0.07 * i) * (1 if i % 2 else -1),
                stomach.centre[1] + stomach.radii[1] + y * (0.03 + 0.015 * jitter[3 + i]),
                stomach.centre[2] + z * 0.12 * jitter[5 + i],
            ),
            (x * 0.014, y * 0.014, max(z * 0.04, 1.0)),
        )
        for i in range(3)
    )
    liver = _Blob((x * 0.31, y * 0.42, z * 0.35), (x * 0.19, y * 0.18, z * 0.45))
    return _Layout(stomach=stomach, tumor=tumor, nodes=nodes, liver=liver)


def _grid(shape: Sequence[int], z_range: tuple[int, int] | None = None) -> Grid:
    z, y, x = shape
    z0, z1 = z_range or (0, z)
    return (
        np.arange(z0, z1, dtype=np.float32).reshape(z1 - z0, 1, 1),
        np.arange(y, dtype=np.float32).reshape(1, y, 1),
        np.arange(x, dtype=np.float32).reshape(1, 1, x),
    )


def _disc(shape: Sequence[int], cx: float, cy: float, rx: float, ry: float) -> np.ndarray:
    """A cylinder through every slice, as a (1, y, x) mask that broadcasts over z."""
    _, yy, xx = _grid((1, shape[1], shape[2]))
    return ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1.0


def make_abdomen_phantom(
    shape: Sequence[int] = (40, 256, 256),
    *,
    phase: str,
    seed: int,
    noise_sigma: float = 8.0,
    z_range: tuple[int, int] | None = None,
) -> np.ndarray:
    """A gastric-cancer-like abdomen in HU (int16, (z, y, x)) for one contrast ``phase``.

    Body with fat and muscle wall, liver with portal veins, spine, aorta, kidneys, an air-filled
    stomach with an enhancing wall and a thickened tumor, and perigastric lymph nodes. The
    phase changes only HU values; ``seed`` moves the anatomy (see ``phantom_boxes``).
    ``noise_sigma`` is the HU noise inside the body. ``z_range`` (z0, z1) draws only those
    slices of the volume of ``shape`` (a slab), so real-size volumes are made in bounded memory.
    """
    if phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}; expected one of {', '.join(PHASES)}")
    column = PHASES.index(phase)
    hu = {name: values[column] for name, values in _ENHANCEMENT.items()}
    _, y, x = (int(n) for n in shape)
    z0, z1 = z_range or (0, int(shape[0]))
    if not 0 <= z0 < z1 <= int(shape[0]):
        raise ValueError(f"z_range {z_range} is not within 0..{shape[0]}")
    z = z1 - z0
    layout = _layout(shape, seed)
    grid = _grid(shape, (z0, z1))
    volume = np.full((z, y, x), -1000, dtype=np.int16)
    volume[:] = np.where(_disc(shape, x * 0.5, y * 0.5, x * 0.45, y * 0.34), hu["muscle"], -1000)
    volume[:] = np.where(_disc(shape, x * 0.5, y * 0.5, x * 0.42, y * 0.31), hu["fat"], volume)
    _draw_spine_and_vessels(volume, shape, hu)
    volume[layout.liver.mask(grid)] = hu["liver"]
    for offset in (-0.05, 0.04):
        vein = _disc(shape, x * (0.31 + offset), y * 0.42, x * 0.012, y * 0.012)
        volume[layout.liver.mask(grid) & vein] = hu["portal_vein"]
    _draw_stomach(volume, layout, grid, hu)
    for node in layout.nodes:
        volume[node.mask(grid)] = hu["node"]
    # Seeded per slab so that a slab's noise does not depend on how the volume was split up.
    rng = np.random.default_rng([seed, column] if z_range is None else [seed, column, z0])
    noise = rng.normal(0.0, noise_sigma, size=(z, y, x))
    body = volume > -900
    volume[body] = np.clip(volume[body] + noise[body], -1024, 3071).astype(np.int16)
    return volume


def _draw_spine_and_vessels(volume: np.ndarray, shape: Sequence[int], hu: dict[str, int]) -> None:
    _, y, x = shape
    volume[:] = np.where(_disc(shape, x * 0.5, y * 0.70, x * 0.075, y * 0.065), 1000, volume)
    volume[:] = np.where(_disc(shape, x * 0.5, y * 0.70, x * 0.060, y * 0.050), 400, volume)
    volume[:] = np.where(_disc(shape, x * 0.5, y * 0.79, x * 0.025, y * 0.02), 20, volume)
    volume[:] = np.where(
        _disc(shape, x * 0.53, y * 0.58, x * 0.035, y * 0.035), hu["aorta"], volume
    )
    for side in (0.30, 0.70):
        kidney = _disc(shape, x * side, y * 0.64, x * 0.06, y * 0.08)
        volume[:] = np.where(kidney, hu["kidney"], volume)


def _draw_stomach(volume: np.ndarray, layout: _Layout, grid: Grid, hu: dict[str, int]) -> None:
    outer = layout.stomach
    # Wall thickness proportional per axis, so the caps stay thin on coarse slices.
    rx, ry, rz = (r * 0.86 for r in outer.radii)
    inner = _Blob(outer.centre, (rx, ry, rz))
    volume[outer.mask(grid)] = hu["stomach_wall"]
    tumor_mask = layout.tumor.mask(grid)
    volume[tumor_mask] = hu["tumor"]
    # The lumen is carved after the tumor so the tumor reads as focal wall thickening.
    lumen = inner.mask(grid) & ~tumor_mask
    volume[lumen] = -1000


def phantom_boxes(shape: Sequence[int], seed: int) -> list[dict[str, Any]]:
    """The stomach, tumor and lymph-node boxes ``make_abdomen_phantom`` draws for this seed.

    Each is ``{"label": ..., "voxel": [x0, y0, z0, x1, y1, z1]}`` (end-exclusive), the tight
    bounding box of that structure's voxels; identical for every phase. Computed slab by slab,
    so real-size shapes need no full-volume masks.
    """
    layout = _layout(shape, seed)
    structures: list[tuple[str, list[_Blob]]] = [
        ("stomach", [layout.stomach, layout.tumor]),  # the tumor bulges out of the wall
        ("tumor", [layout.tumor]),
    ]
    structures += [("lymph_node", [node]) for node in layout.nodes]
    found: list[list[int] | None] = [None] * len(structures)
    for z0 in range(0, int(shape[0]), _BOX_SLAB):
        z1 = min(z0 + _BOX_SLAB, int(shape[0]))
        grid = _grid(shape, (z0, z1))
        for index, (_, blobs) in enumerate(structures):
            mask = np.logical_or.reduce([blob.mask(grid) for blob in blobs])
            box = _bounding_box(mask)
            if box is not None:
                box[2], box[5] = box[2] + z0, box[5] + z0
                found[index] = _union(found[index], box)
    return [
        {"label": label, "voxel": box}
        for (label, _), box in zip(structures, found, strict=True)
        if box is not None
    ]


_BOX_SLAB = 16


def _union(a: list[int] | None, b: list[int]) -> list[int]:
    if a is None:
        return b
    return [*(min(a[k], b[k]) for k in range(3)), *(max(a[k], b[k]) for k in range(3, 6))]


def _bounding_box(mask: np.ndarray) -> list[int] | None:
    if not mask.any():
        return None
    zs = np.flatnonzero(mask.any(axis=(1, 2)))
    ys = np.flatnonzero(mask.any(axis=(0, 2)))
    xs = np.flatnonzero(mask.any(axis=(0, 1)))
    return [int(xs[0]), int(ys[0]), int(zs[0]), int(xs[-1]) + 1, int(ys[-1]) + 1, int(zs[-1]) + 1]
