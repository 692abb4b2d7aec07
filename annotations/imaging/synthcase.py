"""Synthetic Gastric-X case folders of real size, for tests and benches.

A case is four phases of 512×512×200 by default, written as real DICOM (about 100 MB a phase),
with CT-like noise (σ 15 HU inside the body) so that compression is not flattered by flat
regions. Each phase is drawn slab by slab: memory stays at a few slabs whatever the size.
The case folder follows FORMATS.md (``CASE/ct/<phase>/*.dcm``, ``endoscopy.jpg``, ``case.json``)
and its ``case.json`` boxes are the phantom's own (``phantom_boxes``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pydicom

from annotations.imaging.synth import encode_jpeg, endoscopy_frame
from annotations.imaging.synthct import (
    PHASES,
    make_abdomen_phantom,
    phantom_boxes,
    write_synthetic_series_slabs,
)

REAL_SIZE_SHAPE = (200, 512, 512)  # (z, y, x): a 200-slice abdominal series
REAL_SIZE_SPACING = (0.74, 0.74, 2.5)  # mm (x, y, z)
CT_NOISE_HU = 15.0
SLAB_SLICES = 16


def phantom_slabs(
    shape: Sequence[int], *, phase: str, seed: int, noise_sigma: float, slab: int = SLAB_SLICES
) -> Iterator[np.ndarray]:
    """The phantom of ``shape`` for ``phase`` as consecutive HU slabs of ``slab`` slices."""
    for z0 in range(0, int(shape[0]), slab):
        z1 = min(z0 + slab, int(shape[0]))
        yield make_abdomen_phantom(
            shape, phase=phase, seed=seed, noise_sigma=noise_sigma, z_range=(z0, z1)
        )


def write_synthetic_case(
    root: Path,
    case_id: str,
    *,
    shape: Sequence[int] = REAL_SIZE_SHAPE,
    spacing: Sequence[float] = REAL_SIZE_SPACING,
    noise_sigma: float = CT_NOISE_HU,
    phases: Sequence[str] = PHASES,
    seed: int = 0,
) -> Path:
    """Write one case folder ``root/case_id`` (every phase the same ``shape``); return it.

    The phases share one study and one patient position; their origins differ by a few
    millimetres as real acquisitions do. Boxes (tumor, nodes, stomach) are given on the venous
    phase (or the first one written).
    """
    folder = Path(root) / case_id
    study_uid = pydicom.uid.generate_uid()
    x, y, _ = (float(v) for v in spacing)
    for index, phase in enumerate(phases):
        origin = (-x * shape[2] / 2, -y * shape[1] / 2 - 20.0, -400.0 + 1.25 * index)
        write_synthetic_series_slabs(
            folder / "ct" / phase,
            shape,
            phantom_slabs(shape, phase=phase, seed=seed, noise_sigma=noise_sigma),
            spacing=spacing,
            origin=origin,
            phase=phase,
            patient_name=f"SYNTHETIC^{case_id}",
            patient_id=case_id,
            study_uid=study_uid,
        )
    rng = np.random.default_rng(seed)
    frame = endoscopy_frame(rng, (320, 320), scene="gastroscopy", finding="ulcer")
    (folder / "endoscopy.jpg").write_bytes(encode_jpeg(frame))
    box_phase = "venous" if "venous" in phases else phases[0]
    document = case_document(case_id, phantom_boxes(shape, seed), box_phase)
    (folder / "case.json").write_text(json.dumps(document, indent=1))
    return folder


def case_document(case_id: str, boxes: list[dict[str, Any]], phase: str) -> dict[str, Any]:
    """A plausible ``case.json`` with the phantom's ``boxes`` on ``phase``."""
    return {
        "case_id": case_id,
        "tnm": "T3N1M0",
        "indicators": [
            {"name": "CEA", "value": 8.2, "unit": "ng/mL", "reference_range": [0, 5]},
            {"name": "CA19-9", "value": 41, "unit": "U/mL", "reference_range": [0, 37]},
        ],
        "reports": {
            "diagnostic": "Adenocarcinoma of the gastric body.",
            "ct": "Focal wall thickening along the greater curvature; perigastric nodes.",
            "endoscopy": "Ulcerated mass in the gastric body.",
        },
        "boxes": [{"phase": phase, **box} for box in boxes],
        "vqa": [
            {
                "question": "What is the clinical TNM stage?",
                "options": ["T1N0M0", "T3N1M0", "T4bN2M1"],
                "answer": "B",
                "task": "tnm_classification",
            }
        ],
    }
