"""The voxel cache: one ``.npy`` file per volume, int16 (z, y, x) C-order, opened as a memmap.

A memmap means serving slice z touches only that slice's pages, whatever the volume size.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from annotations.imaging.chunks import ChunkedVolume, ChunkError


class VoxelCacheError(ValueError):
    """A cache file that is missing or not an int16 (z, y, x) array."""


def write_voxel_cache(voxels: np.ndarray, path: Path) -> Path:
    """Write HU voxels to ``path`` (.npy) atomically; readers never see a half-written file."""
    array = np.asarray(voxels)
    if array.ndim != 3 or array.dtype != np.int16:
        raise VoxelCacheError(f"voxel cache needs int16 (z, y, x), got {array.dtype} {array.shape}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npy")
    try:
        with os.fdopen(handle, "wb") as stream:
            np.save(stream, np.ascontiguousarray(array), allow_pickle=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def open_voxel_cache(path: Path) -> np.memmap | ChunkedVolume:
    """Open a volume's voxels read-only as int16 (z, y, x): the stored chunks (a folder, see
    ``imaging.chunks``), or a ``.npy`` cache of volumes imported before them, as a memmap."""
    if Path(path).is_dir():
        try:
            return ChunkedVolume(Path(path))
        except ChunkError as error:
            raise VoxelCacheError(str(error)) from None
    try:
        voxels = np.load(Path(path), mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as error:
        raise VoxelCacheError(f"cannot open voxel cache {path}: {error}") from None
    if voxels.ndim != 3 or voxels.dtype != np.int16 or not voxels.flags.c_contiguous:
        raise VoxelCacheError(f"{path} is not an int16 (z, y, x) voxel cache")
    return voxels
