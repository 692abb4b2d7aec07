"""Patient geometry of CT volumes: voxel indices <-> LPS millimetres, 3D box conversions.

Conventions (FORMATS.md, Gastric-X): voxel index order is (x = column, y = row, z = slice),
ranges are end-exclusive, and a point's patient LPS position is
``origin + direction · (index × spacing)`` with ``direction`` the 3×3 matrix SimpleITK gives,
stored row-major as 9 floats (its columns are the directions of the x, y and z axes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

Vector3 = tuple[float, float, float]
VoxelBox = tuple[int, int, int, int, int, int]

IDENTITY_DIRECTION: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


class HasGeometry(Protocol):
    """Anything carrying a volume's geometry (``VolumeGeometry``, ``LoadedVolume``...)."""

    # Read-only members, so that frozen dataclasses and model rows both qualify.
    @property
    def spacing(self) -> Sequence[float]: ...

    @property
    def origin(self) -> Sequence[float]: ...

    @property
    def direction(self) -> Sequence[float]: ...


@dataclass(frozen=True)
class VolumeGeometry:
    """Spacing (sx, sy, sz) mm, origin (LPS mm of voxel (0, 0, 0)) and row-major direction."""

    spacing: Vector3
    origin: Vector3
    direction: tuple[float, ...] = IDENTITY_DIRECTION

    @classmethod
    def of(cls, source: HasGeometry) -> VolumeGeometry:
        """Copy the geometry of any object that has ``spacing``, ``origin`` and ``direction``."""
        return cls(
            spacing=tuple(float(v) for v in source.spacing),  # type: ignore[arg-type]
            origin=tuple(float(v) for v in source.origin),  # type: ignore[arg-type]
            direction=tuple(float(v) for v in source.direction),
        )


class BoxError(ValueError):
    """A 3D voxel box that is malformed or does not fit its volume."""


def _direction_matrix(direction: Sequence[float]) -> np.ndarray:
    matrix = np.asarray(direction, dtype=np.float64)
    if matrix.shape != (9,):
        raise ValueError(f"direction must hold 9 numbers (row-major 3×3), got {matrix.size}")
    return matrix.reshape(3, 3)


def index_to_lps(
    index_xyz: Sequence[float],
    spacing: Sequence[float],
    origin: Sequence[float],
    direction: Sequence[float] = IDENTITY_DIRECTION,
) -> Vector3:
    """Patient LPS millimetres of a (possibly fractional) voxel index (x, y, z)."""
    scaled = np.asarray(index_xyz, dtype=np.float64) * np.asarray(spacing, dtype=np.float64)
    point = np.asarray(origin, dtype=np.float64) + _direction_matrix(direction) @ scaled
    return (float(point[0]), float(point[1]), float(point[2]))


def lps_to_index(
    point_lps: Sequence[float],
    spacing: Sequence[float],
    origin: Sequence[float],
    direction: Sequence[float] = IDENTITY_DIRECTION,
) -> Vector3:
    """Continuous voxel index (x, y, z) of a patient LPS point (inverse of ``index_to_lps``)."""
    offset = np.asarray(point_lps, dtype=np.float64) - np.asarray(origin, dtype=np.float64)
    # solve() rather than a transpose: DICOM directions are only orthonormal to ~1e-6.
    scaled = np.linalg.solve(_direction_matrix(direction), offset)
    index = scaled / np.asarray(spacing, dtype=np.float64)
    return (float(index[0]), float(index[1]), float(index[2]))


def validate_voxel_box(voxel: Sequence[int], shape_zyx: Sequence[int] | None = None) -> VoxelBox:
    """Check ``[x0, y0, z0, x1, y1, z1]`` (end-exclusive); with a shape, also that it fits.

    Returns the box as a tuple of ints; raises ``BoxError`` with a readable reason.
    """
    if isinstance(voxel, str | bytes) or len(voxel) != 6:
        raise BoxError(f"a voxel box needs 6 integers [x0, y0, z0, x1, y1, z1], got {voxel!r}")
    if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in voxel):
        raise BoxError(f"voxel box values must be integers, got {list(voxel)!r}")
    box = tuple(int(v) for v in voxel)
    sizes = None if shape_zyx is None else (shape_zyx[2], shape_zyx[1], shape_zyx[0])
    for axis, name in enumerate("xyz"):
        start, end = box[axis], box[axis + 3]
        if start < 0 or end <= start:
            raise BoxError(f"need 0 ≤ {name}0 < {name}1, got {name}0={start}, {name}1={end}")
        if sizes is not None and end > sizes[axis]:
            raise BoxError(f"{name}1={end} exceeds the volume's {name} size {sizes[axis]}")
    return box  # type: ignore[return-value]


def box_voxel_to_mm(voxel: Sequence[int], geometry: HasGeometry) -> list[list[float]]:
    """LPS mm of the centres of the first voxel (x0, y0, z0) and last voxel (x1-1, y1-1, z1-1)."""
    x0, y0, z0, x1, y1, z1 = validate_voxel_box(voxel)
    corners = ((x0, y0, z0), (x1 - 1, y1 - 1, z1 - 1))
    return [
        list(index_to_lps(corner, geometry.spacing, geometry.origin, geometry.direction))
        for corner in corners
    ]


def box_mm_to_voxel(
    mm_corners: Sequence[Sequence[float]], geometry: HasGeometry, shape_zyx: Sequence[int]
) -> VoxelBox:
    """Voxel box ``[x0, y0, z0, x1, y1, z1]`` of two LPS voxel-centre corners in a volume.

    Used to carry a box to another phase through patient coordinates: each corner is rounded to
    the nearest voxel, the range is re-ordered per axis (the other phase may run the opposite
    way) and clipped to the volume. A box entirely outside the volume raises ``BoxError``.
    """
    if len(mm_corners) != 2:
        raise BoxError(f"need two millimetre corners, got {len(mm_corners)}")
    indices = np.array(
        [lps_to_index(c, geometry.spacing, geometry.origin, geometry.direction) for c in mm_corners]
    )
    # floor(v + 0.5) rounds halves the same way on both ends (np.rint would round to even).
    rounded = np.floor(indices + 0.5).astype(np.int64)
    low, high = rounded.min(axis=0), rounded.max(axis=0)
    sizes = np.array([shape_zyx[2], shape_zyx[1], shape_zyx[0]], dtype=np.int64)
    if np.any(high < 0) or np.any(low > sizes - 1):
        raise BoxError("the box lies entirely outside this volume")
    low = np.clip(low, 0, sizes - 1)
    high = np.clip(high, 0, sizes - 1) + 1
    return (int(low[0]), int(low[1]), int(low[2]), int(high[0]), int(high[1]), int(high[2]))
