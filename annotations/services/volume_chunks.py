"""The compressed voxel chunks the viewer streams, made once per volume from its voxel cache."""

from __future__ import annotations

from pathlib import Path

from annotations.imaging import chunks
from annotations.models import Volume
from annotations.selectors import cases as selectors

CHUNKS_FOLDER = "chunks"


def volume_chunk_file(volume: Volume, index: int) -> Path:
    """Chunk ``index`` of ``volume`` (gzip int16 LE), written beside the voxel cache on first use
    and reused; ``ChunkError`` when out of range. Two requests racing both write the same bytes
    and the rename keeps one."""
    z0, z1 = chunks.chunk_range(index, volume.size_z)
    cache = selectors.volume_cache_file(volume)
    target = cache.parent / CHUNKS_FOLDER / f"{index:04d}.i16.gz"
    if target.is_file() and target.stat().st_mtime >= cache.stat().st_mtime:
        return target
    return chunks.write_chunk(selectors.volume_voxels(volume)[z0:z1], target)
