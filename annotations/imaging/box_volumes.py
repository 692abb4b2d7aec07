"""3D boxes as the field's tools read them: NIfTI label maps and DICOM SEG.

Both are aligned with one CT phase. Our geometry is LPS (SimpleITK's and DICOM's convention):
voxel index (x, y, z) lies at ``origin + direction · (index × spacing)``. NIfTI's affine maps
array indices (i = x, j = y, k = z) to RAS, so its first two rows are the LPS ones negated; a
reader that speaks LPS (SimpleITK) gets our origin and direction back exactly.

NIfTI: one uint8 label map per phase, value = the label's number in ``LABEL_VALUES``; where boxes
overlap, the smaller box wins (a tumor inside the stomach box stays a tumor).
DICOM SEG (highdicom): one binary segment per label present, its frames the union of that
label's boxes (segments may overlap), referencing the de-identified series it was drawn on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# Label numbers in the label maps, stable across releases (0 is background).
LABEL_VALUES = {
    "tumor": 1,
    "lymph_node": 2,
    "stomach": 3,
    "lesion": 4,
    "polyp": 5,
    "instrument": 6,
    "other": 7,
}
LPS_TO_RAS = np.diag([-1.0, -1.0, 1.0])


@dataclass(frozen=True)
class PhaseBoxes:
    """One phase's geometry (LPS) and its boxes: (label, [x0, y0, z0, x1, y1, z1])."""

    shape: tuple[int, int, int]  # (z, y, x)
    spacing: Sequence[float]
    origin: Sequence[float]
    direction: Sequence[float]  # row-major 3×3
    boxes: Sequence[tuple[str, Sequence[int]]]


def ras_affine(spacing: Sequence[float], origin: Sequence[float], direction: Sequence[float]):
    """The NIfTI affine (RAS) of a volume whose LPS geometry is given, indices (x, y, z)."""
    lps = np.eye(4)
    lps[:3, :3] = np.asarray(direction, dtype=np.float64).reshape(3, 3) * np.asarray(spacing)
    lps[:3, 3] = np.asarray(origin, dtype=np.float64)
    flip = np.eye(4)
    flip[:3, :3] = LPS_TO_RAS
    return flip @ lps


def label_map(phase: PhaseBoxes) -> np.ndarray:
    """The uint8 (z, y, x) label map of ``phase``'s boxes, smaller boxes painted last."""
    labels = np.zeros(phase.shape, dtype=np.uint8)

    def size(entry: tuple[str, Sequence[int]]) -> int:
        x0, y0, z0, x1, y1, z1 = entry[1]
        return (x1 - x0) * (y1 - y0) * (z1 - z0)

    for label, (x0, y0, z0, x1, y1, z1) in sorted(phase.boxes, key=size, reverse=True):
        labels[z0:z1, y0:y1, x0:x1] = LABEL_VALUES[label]
    return labels


def write_nifti_labels(phase: PhaseBoxes, path: Path) -> Path:
    """Write ``phase``'s label map as NIfTI (.nii.gz) with the phase's geometry (RAS affine)."""
    import nibabel

    affine = ras_affine(phase.spacing, phase.origin, phase.direction)
    image = nibabel.Nifti1Image(np.ascontiguousarray(label_map(phase).transpose(2, 1, 0)), affine)
    image.header.set_xyzt_units("mm")
    image.set_qform(affine, code=1)  # scanner coordinates
    image.set_sform(affine, code=1)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nibabel.save(image, str(path))
    return path


def _segment_codes(label: str):
    from pydicom.sr.codedict import codes

    sct = codes.SCT
    anatomy, abnormal = sct.AnatomicalStructure, sct.MorphologicallyAbnormalStructure
    return {
        "tumor": (abnormal, sct.Neoplasm),
        "lymph_node": (anatomy, sct.LymphNode),
        "stomach": (anatomy, sct.Stomach),
        "lesion": (abnormal, sct.Lesion),
    }.get(label, (sct.PhysicalObject, sct.PhysicalObject))


_TYPE2_COPIED = (
    "PatientName",
    "PatientID",
    "PatientBirthDate",
    "PatientSex",
    "StudyDate",
    "StudyTime",
    "StudyID",
    "ReferringPhysicianName",
    "AccessionNumber",
)


def _seg_sources(series_folder: Path) -> list[Any]:
    """The stored series' headers in z order, with the Type 2 attributes a SEG copies from its
    source present (de-identification may have removed them; the SEG carries them empty)."""
    from annotations.imaging.series_store import series_headers

    datasets = series_headers(series_folder)
    for ds in datasets:
        for keyword in _TYPE2_COPIED:
            if keyword not in ds:
                setattr(ds, keyword, "")
    return datasets


def write_dicom_seg(
    phase: PhaseBoxes,
    series_folder: Path,
    path: Path,
    *,
    label_names: dict[str, str],
    series_description: str = "Boxes",
) -> Path:
    """Write ``phase``'s boxes as a DICOM SEG referencing the stored series in ``series_folder``
    (its de-identified headers: a SEG references its source, it needs none of its pixels).

    One binary segment per label present, named ``label_names[label]``; frames only where a
    segment has voxels. Raises ``ValueError`` when the series does not match the geometry.
    """
    import highdicom
    import pydicom

    sources = _seg_sources(series_folder)
    z, y, x = phase.shape
    if len(sources) != z or (int(sources[0].Rows), int(sources[0].Columns)) != (y, x):
        raise ValueError(f"the series has {len(sources)} slices, the boxes' phase {phase.shape}")
    labels = sorted({label for label, _ in phase.boxes}, key=lambda name: LABEL_VALUES[name])
    masks = np.zeros((z, y, x, len(labels)), dtype=bool)
    descriptions = []
    for number, label in enumerate(labels, start=1):
        for box_label, (x0, y0, z0, x1, y1, z1) in phase.boxes:
            if box_label == label:
                masks[z0:z1, y0:y1, x0:x1, number - 1] = True
        category, kind = _segment_codes(label)
        descriptions.append(
            highdicom.seg.SegmentDescription(
                segment_number=number,
                segment_label=label_names.get(label, label),
                segmented_property_category=category,
                segmented_property_type=kind,
                algorithm_type=highdicom.seg.SegmentAlgorithmTypeValues.MANUAL,
            )
        )
    seg = highdicom.seg.Segmentation(
        source_images=sources,
        pixel_array=masks,
        segmentation_type=highdicom.seg.SegmentationTypeValues.BINARY,
        segment_descriptions=descriptions,
        series_instance_uid=highdicom.UID(),
        series_number=900,
        sop_instance_uid=highdicom.UID(),
        instance_number=1,
        manufacturer="ClinReview",
        manufacturer_model_name="ClinReview box export",
        software_versions="1",
        device_serial_number="0",
        series_description=series_description,
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    seg.save_as(path)
    pydicom.dcmread(path, stop_before_pixels=True)  # written whole and readable
    return path
