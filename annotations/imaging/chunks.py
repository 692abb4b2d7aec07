"""The stored form of a CT volume: chunks of consecutive axial slices, int16 little-endian, each
chunk one gzip file, written once at import and used for everything (slices, streaming, exports).

A volume folder holds ``index.json`` (shape, slices per chunk, and where each slice starts in
its chunk file) and ``NNNN.i16.gz``. Each chunk is one gzip member, so the viewer gets it as is
(``Content-Encoding: gzip``); inside, the deflate stream is fully flushed after every slice, so
that the server inflates one slice alone from its offset (a slice PNG reads about 1/16 of a
chunk). Chunk ``i`` holds slices ``[i·n, min((i+1)·n, nz))`` for ``n = CHUNK_SLICES``.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np

CHUNK_SLICES = 16
# Level 1 squeezes noisy int16 CT about as well as level 6 and is several times faster.
GZIP_LEVEL = 1
INDEX_NAME = "index.json"
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, mtime 0


class ChunkError(ValueError):
    """A chunk or volume folder that is missing, truncated or of the wrong size."""


def chunk_count(size_z: int, slices: int = CHUNK_SLICES) -> int:
    return -(-int(size_z) // slices)


def chunk_range(index: int, size_z: int, slices: int = CHUNK_SLICES) -> tuple[int, int]:
    """The slices [z0, z1) of chunk ``index``; ``ChunkError`` past the end."""
    if not 0 <= index < chunk_count(size_z, slices):
        raise ChunkError(f"chunk {index} out of range for {size_z} slices")
    return index * slices, min((index + 1) * slices, int(size_z))


def chunk_name(index: int) -> str:
    return f"{index:04d}.i16.gz"


def little_endian_bytes(voxels: np.ndarray) -> bytes:
    """int16 voxels as the browser's ``Int16Array`` reads them (little-endian everywhere)."""
    return np.ascontiguousarray(voxels).astype("<i2", copy=False).tobytes()


def gzip_bytes(data: bytes) -> bytes:
    """One gzip member of ``data`` (mtime 0: equal voxels give equal bytes)."""
    return gzip_slices([data])[0]


def gzip_slices(slices: Iterable[bytes]) -> tuple[bytes, list[int]]:
    """One gzip member of the slices one after the other, fully flushed after each; with the
    offset in it where each slice's deflate data starts (and, last, where the trailer starts)."""
    deflate = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -15)
    parts, offsets = [_GZIP_HEADER], []
    position, crc, size = len(_GZIP_HEADER), 0, 0
    for data in slices:
        offsets.append(position)
        block = deflate.compress(data) + deflate.flush(zlib.Z_FULL_FLUSH)
        parts.append(block)
        position += len(block)
        crc, size = zlib.crc32(data, crc), size + len(data)
    tail = deflate.flush(zlib.Z_FINISH)
    offsets.append(position)
    parts += [tail, struct.pack("<II", crc, size & 0xFFFFFFFF)]
    return b"".join(parts), offsets


def _write_atomic(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_chunked_volume(slabs: Iterable[np.ndarray], folder: Path) -> Path:
    """Store HU voxels given as consecutive int16 (k, y, x) slabs in ``folder``; the index is
    written last, so a folder without one is a half-written store. Returns ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    pending: list[np.ndarray] = []
    offsets: list[list[int]] = []
    rows = columns = None
    size_z = 0

    def flush(count: int) -> None:
        block = np.concatenate(pending) if len(pending) > 1 else pending[0]
        data, starts = gzip_slices(little_endian_bytes(block[k]) for k in range(count))
        _write_atomic(folder / chunk_name(len(offsets)), data)
        offsets.append(starts)
        pending[:] = [block[count:]] if len(block) > count else []

    for slab in slabs:
        array = np.asarray(slab)
        if array.ndim != 3 or array.dtype != np.int16:
            raise ChunkError(f"voxels are int16 (z, y, x), got {array.dtype} {array.shape}")
        if rows is None:
            rows, columns = array.shape[1:]
        elif array.shape[1:] != (rows, columns):
            raise ChunkError(f"a slab of {array.shape} in a volume of {rows}×{columns} slices")
        pending.append(array)
        size_z += len(array)
        while sum(len(p) for p in pending) >= CHUNK_SLICES:
            flush(CHUNK_SLICES)
    if pending and sum(len(p) for p in pending):
        flush(sum(len(p) for p in pending))
    if not size_z:
        raise ChunkError("a volume needs at least one slice")
    index = {"shape": [size_z, rows, columns], "chunk_slices": CHUNK_SLICES, "offsets": offsets}
    _write_atomic(folder / INDEX_NAME, json.dumps(index).encode())
    return folder


def is_chunked_volume(path: Path) -> bool:
    return (Path(path) / INDEX_NAME).is_file()


class ChunkedVolume:
    """A stored volume read like a read-only int16 (z, y, x) array: ``volume[z]`` inflates one
    slice, ``volume[z0:z1]`` those slices, ``np.asarray(volume)`` all of them."""

    ndim = 3
    dtype = np.dtype(np.int16)

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        try:
            index = json.loads((self.folder / INDEX_NAME).read_text())
            self.shape: tuple[int, int, int] = tuple(int(n) for n in index["shape"])  # type: ignore[assignment]
            self.chunk_slices = int(index["chunk_slices"])
            self.offsets: list[list[int]] = index["offsets"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ChunkError(f"cannot open stored volume {folder}: {error}") from None
        if len(self.offsets) != chunk_count(self.shape[0], self.chunk_slices):
            raise ChunkError(f"{folder}: the index does not match its shape {self.shape}")

    def __len__(self) -> int:
        return self.shape[0]

    def chunk_file(self, index: int) -> Path:
        chunk_range(index, self.shape[0], self.chunk_slices)
        return self.folder / chunk_name(index)

    def slice(self, z: int) -> np.ndarray:
        if not 0 <= z < self.shape[0]:
            raise IndexError(f"slice {z} out of range 0..{self.shape[0] - 1}")
        index, k = divmod(z, self.chunk_slices)
        start, end = self.offsets[index][k], self.offsets[index][k + 1]
        with open(self.chunk_file(index), "rb") as stream:
            stream.seek(start)
            compressed = stream.read(end - start)
        # Each slice starts after a full flush: a raw inflater needs nothing before it.
        data = zlib.decompressobj(-15).decompress(compressed)
        rows, columns = self.shape[1:]
        if len(data) != rows * columns * 2:
            raise ChunkError(f"slice {z} of {self.folder} is truncated")
        return np.frombuffer(data, dtype="<i2").reshape(rows, columns).astype(np.int16)

    def __getitem__(self, key):
        if isinstance(key, int | np.integer):
            return self.slice(int(key) + (self.shape[0] if key < 0 else 0))
        if isinstance(key, slice):
            zs = range(*key.indices(self.shape[0]))
            if not zs:
                return np.empty((0, *self.shape[1:]), dtype=np.int16)
            return np.stack([self.slice(z) for z in zs])
        if isinstance(key, tuple) and key:
            first = self[key[0]]
            rest = key[1:] if isinstance(key[0], int | np.integer) else (slice(None), *key[1:])
            return first[rest] if len(key) > 1 else first
        raise TypeError(f"a stored volume is indexed by slice, not {key!r}")

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        voxels = self[0 : self.shape[0]]
        return voxels if dtype is None else voxels.astype(dtype)
