"""Gastric-X case folders for tests: phantom CT written as real DICOM, with planted PHI."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pydicom
from pydicom.valuerep import format_number_as_ds

from annotations.imaging import ct
from tests.factories import jpeg_bytes

PYDICOM_TEST_FILES = Path(pydicom.__file__).parent / "data" / "test_files"
CT_SMALL = PYDICOM_TEST_FILES / "CT_small.dcm"

# Strings that must never appear in stored files, pages, API answers or exports.
PHI = {
    "PatientName": "DOE^JOHN^PHIMARKER",
    "PatientID": "MRN-PHI-445566",
    "PatientBirthDate": "19470312",
    "InstitutionName": "Saint Phimarker Hospital",
    "ReferringPhysicianName": "HOUSE^GREGORY^PHIDOC",
    "AccessionNumber": "ACCPHI7781",
    "StudyDescription": "PHIMARKER ABDOMEN",
}
PHI_STRINGS = ("PHIMARKER", "MRN-PHI-445566", "19470312", "Phimarker", "PHIDOC", "ACCPHI7781")

# Awkward geometry per phase: different origins, slice spacings and counts; files shuffled.
PHASE_GEOMETRY: dict[str, dict[str, Any]] = {
    "non_contrast": {
        "shape": (10, 48, 64),
        "spacing": (0.8, 0.7, 5.0),
        "origin": (-250.0, 180.0, -900.0),
    },
    "arterial": {
        "shape": (20, 48, 64),
        "spacing": (0.8, 0.7, 2.5),
        "origin": (-250.0, 180.0, -900.0),
    },
    "venous": {"shape": (9, 48, 64), "spacing": (0.8, 0.7, 5.0), "origin": (-251.6, 181.4, -890.0)},
    "delayed": {
        "shape": (12, 48, 64),
        "spacing": (0.8, 0.7, 4.0),
        "origin": (-250.0, 180.0, -902.0),
    },
}

# Fewer, smaller slices for tests that only need the import to fail or succeed.
SMALL_GEOMETRY: dict[str, dict[str, Any]] = {
    "arterial": {
        "shape": (6, 40, 32),
        "spacing": (0.8, 0.7, 5.0),
        "origin": (-250.0, 180.0, -900.0),
    },
    "venous": {"shape": (7, 40, 32), "spacing": (0.8, 0.7, 5.0), "origin": (-251.6, 181.4, -890.0)},
    "delayed": {
        "shape": (8, 40, 32),
        "spacing": (0.8, 0.7, 4.0),
        "origin": (-250.0, 180.0, -902.0),
    },
}


def case_document(case_id: str, **changes: Any) -> dict[str, Any]:
    document = {
        "case_id": case_id,
        "tnm": "T3N1M0",
        "indicators": [
            {"name": "CEA", "value": 12.4, "unit": "ng/mL", "reference_range": [0, 5]},
            {"name": "Hemoglobin", "value": 131, "unit": "g/L", "reference_range": [120, 160]},
            {"name": "CA72-4", "value": "3.1", "unit": "U/mL", "reference_range": None},
            {"name": "CA19-9", "value": " <0.6 ", "unit": "U/mL", "reference_range": [0, 37]},
        ],
        "reports": {
            "diagnostic": "Adenocarcinoma of the gastric body <b>poorly</b> differentiated.",
            "ct": "Wall thickening along the greater curvature.",
            "endoscopy": "Ulcerated mass in the gastric body.",
        },
        "boxes": [{"phase": "venous", "label": "tumor", "voxel": [10, 12, 2, 30, 40, 6]}],
        # ^ fits both PHASE_GEOMETRY and SMALL_GEOMETRY
        "vqa": [
            {
                "question": "What is the clinical TNM stage?",
                "options": ["T1N0M0", "T3N1M0", "T4bN2M1"],
                "answer": "B",
                "task": "tnm_classification",
            },
            {
                "question": "Which marker is raised?",
                "options": ["AFP", "CEA"],
                "answer": "B",
                "task": "indicator_reasoning",
            },
        ],
    }
    document.update(changes)
    return document


def write_case(
    root: Path,
    case_id: str = "GX-T-0001",
    *,
    phases: dict[str, dict[str, Any]] | None = None,
    document: dict[str, Any] | None = None,
    seed: int = 3,
    endoscopy: bytes | None = None,
) -> Path:
    """One case folder under ``root``; returns it. Geometry per phase from ``phases``."""
    folder = root / case_id
    for phase, geometry in (phases or PHASE_GEOMETRY).items():
        hu = ct.make_abdomen_phantom(geometry["shape"], phase=phase, seed=seed)
        ct.write_synthetic_series(
            folder / "ct" / phase,
            hu,
            spacing=geometry["spacing"],
            origin=geometry["origin"],
            direction=geometry.get("direction", ct.IDENTITY_DIRECTION),
            phase=phase,
            patient_name=PHI["PatientName"],
            patient_id=PHI["PatientID"],
            shuffle_names=True,
            extra_tags={k: v for k, v in PHI.items() if k not in ("PatientName", "PatientID")},
        )
    (folder / "endoscopy.jpg").write_bytes(endoscopy or jpeg_bytes(size=(96, 80)))
    (folder / "case.json").write_text(json.dumps(document or case_document(case_id)))
    return folder


def write_real_ct_phase(folder: Path, count: int = 4, gap: float = 5.0) -> None:
    """pydicom's real CT_small.dcm stacked along z (stored + 10·k), names in reverse order."""
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(count):
        ds = pydicom.dcmread(CT_SMALL)
        x, y, z = (float(v) for v in ds.ImagePositionPatient)
        ds.ImagePositionPatient = [format_number_as_ds(v) for v in (x, y, z + gap * k)]
        ds.SOPInstanceUID = pydicom.uid.generate_uid()
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.PixelData = (ds.pixel_array + 10 * k).astype(np.int16).tobytes()
        ds.PatientName = PHI["PatientName"]
        ds.PatientID = PHI["PatientID"]
        ds.InstitutionName = PHI["InstitutionName"]
        ds.save_as(folder / f"img_{count - k:03d}.dcm")


def zip_tree(tree: Path, archive: Path, under: str = "") -> Path:
    """Zip every file of `tree` (case folders, say) into `archive`, under the folder `under`."""
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted(tree.rglob("*")):
            if path.is_file():
                zipped.write(path, Path(under) / path.relative_to(tree))
    return archive
