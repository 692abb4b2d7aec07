"""Voxel chunks: runs of consecutive axial slices, int16 little-endian, gzip-compressed.

A chunk is what the viewer streams (the browser inflates it as ``Content-Encoding: gzip``) and
a small enough unit to decode for one slice on the server. Chunk ``i`` of a volume holds slices
``[i·n, min((i+1)·n, nz))`` for ``n = CHUNK_SLICES``.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import zlib
from pathlib import Path

import numpy as np

CHUNK_SLICES = 16
# Level 1 squeezes noisy int16 CT about as well as level 6 and is several times faster.
GZIP_LEVEL = 1


class ChunkError(ValueError):
    """A chunk file that is missing, truncated or of the wrong size."""


def chunk_count(size_z: int, slices: int = CHUNK_SLICES) -> int:
    return -(-int(size_z) // slices)


def chunk_range(index: int, size_z: int, slices: int = CHUNK_SLICES) -> tuple[int, int]:
    """The slices [z0, z1) of chunk ``index``; ``ChunkError`` past the end."""
    if not 0 <= index < chunk_count(size_z, slices):
        raise ChunkError(f"chunk {index} out of range for {size_z} slices")
    return index * slices, min((index + 1) * slices, int(size_z))


def little_endian_bytes(voxels: np.ndarray) -> bytes:
    """int16 voxels as the browser's ``Int16Array`` reads them (little-endian everywhere)."""
    return np.ascontiguousarray(voxels).astype("<i2", copy=False).tobytes()


def gzip_bytes(data: bytes) -> bytes:
    # mtime=0: the same voxels always give the same bytes (stable ETags and md5s).
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def write_chunk(voxels: np.ndarray, path: Path) -> Path:
    """Write the (k, y, x) int16 ``voxels`` gzip-compressed to ``path`` atomically."""
    array = np.asarray(voxels)
    if array.ndim != 3 or array.dtype != np.int16:
        raise ChunkError(f"a chunk is int16 (k, y, x), got {array.dtype} {array.shape}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".gz")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(gzip_bytes(little_endian_bytes(array)))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def read_chunk(path: Path, slices: int, rows: int, columns: int) -> np.ndarray:
    """The (slices, rows, columns) int16 voxels of a chunk file."""
    try:
        data = gzip.decompress(Path(path).read_bytes())
    except (OSError, EOFError, zlib.error) as error:
        raise ChunkError(f"cannot read chunk {path}: {error}") from None
    if len(data) != slices * rows * columns * 2:
        raise ChunkError(f"chunk {path} holds {len(data)} bytes, not {slices}×{rows}×{columns}")
    return np.frombuffer(data, dtype="<i2").reshape(slices, rows, columns).astype(np.int16)
