"""Imaging modalities and the degradation kinds that make physical sense for each.

The degradation engine implements exactly these kinds; `formats.taxonomy` reuses the same spellings
for MedQ-DEG files, so the vocabulary lives here, below both.
"""

from __future__ import annotations

MODALITIES = ("CT", "MRI", "X-ray", "Ultrasound", "Endoscopy", "Dermoscopy", "Histopathology")

CT_KINDS = ("limited_angle", "sparse_view", "low_dose")
MRI_KINDS = ("bias_field_artifact", "undersampling_artifact", "ghosting_artifact")
HISTOPATHOLOGY_KINDS = ("blood_cell_artifact", "dark_spots_artifact", "bubble_artifact")
ANY_MODALITY_KINDS = (
    "rotation_artifact",
    "random_motion_artifact",
    "adjust_brightness",
    "exposure_artifact",
    "reduce_contrast",
    "gaussian_noise",
    "downsample_artifact",
    "motion_blur",
    "gaussian_blur",
)

# The phases of a contrast CT study, in the order they are acquired.
CT_PHASES = ("non_contrast", "arterial", "venous", "delayed")
