"""The CT imaging API in one place: loading, de-identification, cache, windowing, geometry.

Import from here (``from annotations.imaging import ct``); the sub-modules hold the code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from annotations.imaging.modalities import CT_PHASES
from annotations.imaging.volume import VoxelCacheError, open_voxel_cache, write_voxel_cache
from annotations.imaging.window import (
    WINDOW_PRESETS,
    apply_window,
    encode_png,
    render_slice_png,
    window_lut,
)

# pydicom and SimpleITK take a large part of a second to load: the names of the modules that use
# them are looked up at first use (PEP 562), so that a web process which only windows cached
# voxels, or lists phases, does not load them at start.
_LAZY = {
    "Pseudonymizer": "deid",
    "deidentify_dataset": "deid",
    "deidentify_series": "deid",
    "LoadedVolume": "dicom",
    "VolumeError": "dicom",
    "load_dicom_series": "dicom",
    "load_nifti": "dicom",
    "make_abdomen_phantom": "synthct",
    "phantom_boxes": "synthct",
    "write_synthetic_series": "synthct",
}
PHASES = CT_PHASES

if TYPE_CHECKING:
    from annotations.imaging.deid import Pseudonymizer, deidentify_dataset, deidentify_series
    from annotations.imaging.dicom import LoadedVolume, VolumeError, load_dicom_series, load_nifti
    from annotations.imaging.synthct import (
        make_abdomen_phantom,
        phantom_boxes,
        write_synthetic_series,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"annotations.imaging.{module}"), name)


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
