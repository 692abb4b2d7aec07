"""The CT imaging API in one place: loading, de-identification, cache, windowing, geometry.

Import from here (``from annotations.imaging import ct``); the sub-modules hold the code.
"""

from __future__ import annotations

from annotations.imaging.deid import Pseudonymizer, deidentify_dataset, deidentify_series
from annotations.imaging.dicom import LoadedVolume, VolumeError, load_dicom_series, load_nifti
from annotations.imaging.geometry import (
    IDENTITY_DIRECTION,
    BoxError,
    VolumeGeometry,
    box_mm_to_voxel,
    box_voxel_to_mm,
    index_to_lps,
    lps_to_index,
    validate_voxel_box,
)
from annotations.imaging.synthct import (
    PHASES,
    make_abdomen_phantom,
    phantom_boxes,
    write_synthetic_series,
)
from annotations.imaging.volume import VoxelCacheError, open_voxel_cache, write_voxel_cache
from annotations.imaging.window import (
    WINDOW_PRESETS,
    apply_window,
    encode_png,
    render_slice_png,
    window_lut,
)

__all__ = [
    "IDENTITY_DIRECTION",
    "PHASES",
    "WINDOW_PRESETS",
    "BoxError",
    "LoadedVolume",
    "Pseudonymizer",
    "VolumeError",
    "VolumeGeometry",
    "VoxelCacheError",
    "apply_window",
    "box_mm_to_voxel",
    "box_voxel_to_mm",
    "deidentify_dataset",
    "deidentify_series",
    "encode_png",
    "index_to_lps",
    "load_dicom_series",
    "load_nifti",
    "lps_to_index",
    "make_abdomen_phantom",
    "open_voxel_cache",
    "phantom_boxes",
    "render_slice_png",
    "validate_voxel_box",
    "window_lut",
    "write_synthetic_series",
    "write_voxel_cache",
]
