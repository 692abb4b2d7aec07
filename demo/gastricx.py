"""Synthetic Gastric-X case folders: 4-phase CT as real DICOM, endoscopy, labs, reports, VQA.

The clinical content follows the phantom: the tumour sits on the greater curvature of the
gastric body where `make_abdomen_phantom` puts it, the node count is the number of nodes drawn,
and sizes in the reports come from the boxes and the voxel spacing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pydicom
from pydicom.uid import generate_uid

from annotations.imaging.synth import encode_jpeg, endoscopy_scene
from annotations.imaging.synthct import (
    PHASES,
    make_abdomen_phantom,
    phantom_boxes,
    write_synthetic_series,
)
from demo.gastricx_text import (
    CaseFacts,
    case_indicators,
    case_reports,
    case_vqa,
    patient_identity,
)

CT_SHAPE = (32, 256, 256)  # (z, y, x)
CT_SPACING = (0.78, 0.78, 5.0)  # (x, y, z) mm
_GASTRICX_FAMILY = 3


def write_gastricx_cases(
    root: Path, *, seed: int, n_cases: int, ct_shape: tuple[int, int, int] = CT_SHAPE
) -> Path:
    """Write `n_cases` case folders (FORMATS.md § Gastric-X) under `root`; return `root`.
    `ct_shape` (z, y, x) is each phase's volume (the fixtures use a small one)."""
    root.mkdir(parents=True, exist_ok=True)
    for number in range(1, n_cases + 1):
        write_case(root, seed=seed, number=number, ct_shape=ct_shape)
    return root


def write_case(
    root: Path, *, seed: int, number: int, ct_shape: tuple[int, int, int] = CT_SHAPE
) -> Path:
    """Write one case folder `root/GX-DEMO-000n/` and return it."""
    rng = np.random.default_rng([seed, _GASTRICX_FAMILY, number])
    case_id = f"GX-DEMO-{number:04d}"
    case_dir = root / case_id
    phantom_seed = int(rng.integers(0, 2**31 - 1))
    facts = _case_facts(rng, case_id, phantom_seed, ct_shape)
    _write_ct(case_dir, rng, seed=seed, number=number, phantom_seed=phantom_seed, shape=ct_shape)
    frame = endoscopy_scene(rng, (448, 448), scene="gastroscopy", finding="ulcer")
    (case_dir / "endoscopy.jpg").write_bytes(encode_jpeg(frame.pixels, quality=90))
    indicators = case_indicators(rng)
    document = {
        "case_id": case_id,
        "tnm": facts.tnm,
        "indicators": indicators,
        "reports": case_reports(rng, facts, indicators),
        "boxes": facts.boxes,
        "vqa": case_vqa(rng, facts, indicators),
    }
    (case_dir / "case.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return case_dir


def _case_facts(
    rng: np.random.Generator, case_id: str, phantom_seed: int, shape: tuple[int, int, int]
) -> CaseFacts:
    boxes = phantom_boxes(shape, phantom_seed)
    tumor = next(b["voxel"] for b in boxes if b["label"] == "tumor")
    nodes = [b["voxel"] for b in boxes if b["label"] == "lymph_node"]
    size = tuple(round((tumor[3 + a] - tumor[a]) * CT_SPACING[a], 1) for a in range(3))
    node_mm = max(round((n[3] - n[0]) * CT_SPACING[0], 1) for n in nodes) if nodes else 0.0
    # The phantom's tumour bulges out of the wall: T3 (subserosa) or T4a (serosa) fit the picture.
    t_stage = str(rng.choice(["T3", "T4a"]))
    n_stage = "N0" if not nodes else "N1" if len(nodes) <= 2 else "N2"
    per_phase = [
        {"phase": phase, "label": b["label"], "voxel": list(b["voxel"])}
        for phase in PHASES
        for b in boxes
    ]
    return CaseFacts(
        case_id=case_id,
        tnm=f"{t_stage}{n_stage}M0",
        tumor_size_mm=size,  # type: ignore[arg-type]
        node_count=len(nodes),
        node_short_axis_mm=node_mm,
        boxes=per_phase,
    )


def _write_ct(
    case_dir: Path,
    rng: np.random.Generator,
    *,
    seed: int,
    number: int,
    phantom_seed: int,
    shape: tuple[int, int, int],
) -> None:
    identity = patient_identity(rng, number)
    study_uid = generate_uid(entropy_srcs=["clinreview-demo", str(seed), str(number), "study"])
    frame_uid = generate_uid(entropy_srcs=["clinreview-demo", str(seed), str(number), "frame"])
    origin = (-100.0 + float(rng.uniform(-5, 5)), -180.0, -350.0 + 10.0 * number)
    for phase in PHASES:
        hu = make_abdomen_phantom(shape, phase=phase, seed=phantom_seed)
        series_uid = generate_uid(entropy_srcs=[study_uid, phase])
        paths = write_synthetic_series(
            case_dir / "ct" / phase,
            hu,
            spacing=CT_SPACING,
            origin=origin,
            phase=phase,
            patient_name=identity["PatientName"],
            patient_id=identity["PatientID"],
            study_uid=study_uid,
            shuffle_names=False,
            extra_tags={
                **{k: v for k, v in identity.items() if k not in ("PatientName", "PatientID")},
                "SeriesInstanceUID": series_uid,
                "FrameOfReferenceUID": frame_uid,
            },
        )
        _make_instance_uids_deterministic(paths, series_uid)


def _make_instance_uids_deterministic(paths: list[Path], series_uid: str) -> None:
    # The writer draws random SOP Instance UIDs; demo files must be identical for a seed.
    for path in paths:
        dataset = pydicom.dcmread(path)
        uid = generate_uid(entropy_srcs=[series_uid, str(dataset.InstanceNumber)])
        dataset.SOPInstanceUID = uid
        dataset.file_meta.MediaStorageSOPInstanceUID = uid
        dataset.save_as(path, enforce_file_format=True)
