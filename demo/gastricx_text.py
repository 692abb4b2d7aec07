"""Clinical text for synthetic Gastric-X cases: fake identity, laboratory values, reports, VQA."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from demo.content import shuffle_options


@dataclass(frozen=True)
class CaseFacts:
    """What the phantom shows for one case, in the terms the reports and questions use."""

    case_id: str
    tnm: str
    tumor_size_mm: tuple[float, float, float]
    node_count: int
    node_short_axis_mm: float
    boxes: list[dict[str, object]]


_NAMES = ("ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE", "TEN")

# name, unit, reference range, (typical low, typical high) of values drawn for these patients.
# Tumour markers lean high and haemoglobin/albumin low, as in advanced gastric cancer.
_INDICATORS: tuple[tuple[str, str, tuple[float, float], tuple[float, float]], ...] = (
    ("CEA", "ng/mL", (0.0, 5.0), (1.2, 24.0)),
    ("CA19-9", "U/mL", (0.0, 37.0), (8.0, 160.0)),
    ("CA72-4", "U/mL", (0.0, 6.9), (2.0, 38.0)),
    ("CA125", "U/mL", (0.0, 35.0), (6.0, 48.0)),
    ("AFP", "ng/mL", (0.0, 7.0), (1.0, 6.0)),
    ("Haemoglobin", "g/L", (130.0, 175.0), (88.0, 142.0)),
    ("Albumin", "g/L", (40.0, 55.0), (31.0, 44.0)),
    ("Total protein", "g/L", (65.0, 85.0), (58.0, 76.0)),
    ("White blood cells", "10^9/L", (3.5, 9.5), (4.1, 9.0)),
    ("Platelets", "10^9/L", (125.0, 350.0), (160.0, 420.0)),
    ("ALT", "U/L", (9.0, 50.0), (12.0, 38.0)),
    ("Creatinine", "umol/L", (57.0, 111.0), (60.0, 98.0)),
)
_MARKERS = ("CEA", "CA19-9", "CA72-4", "CA125", "AFP")


def patient_identity(rng: np.random.Generator, number: int) -> dict[str, str]:
    """Recognisable fake PHI for the DICOM headers (import must strip it)."""
    name = _NAMES[(number - 1) % len(_NAMES)]
    year = int(rng.integers(1945, 1975))
    return {
        "PatientName": f"DEMO^PATIENT^{name}",
        "PatientID": f"DEMO-MRN-{100000 + number * 7919}",
        "PatientBirthDate": f"{year}{int(rng.integers(1, 13)):02d}{int(rng.integers(1, 29)):02d}",
        "PatientSex": str(rng.choice(["M", "F"], p=[0.65, 0.35])),
        "PatientAge": f"{2024 - year:03d}Y",
        "InstitutionName": "Demo General Hospital",
        "InstitutionAddress": "1 Example Road, Demo City",
        "ReferringPhysicianName": "DEMO^REFERRING^DOCTOR",
        "AccessionNumber": f"ACC{20240000 + number}",
        "StudyDate": f"2024{int(rng.integers(1, 13)):02d}{int(rng.integers(1, 29)):02d}",
        "StudyTime": "093000",
        "StudyID": f"S{number:04d}",
        "StudyDescription": "CT ABDOMEN MULTIPHASE (GASTRIC PROTOCOL)",
    }


def case_indicators(rng: np.random.Generator) -> list[dict[str, object]]:
    """Serum tests and tumour markers; CEA and CA72-4 are always above range (a teaching case)."""
    indicators = []
    for name, unit, (low, high), (draw_low, draw_high) in _INDICATORS:
        value = float(rng.uniform(draw_low, draw_high))
        if name in ("CEA", "CA72-4"):
            value = max(value, high * float(rng.uniform(1.4, 4.0)))
        digits = 0 if high >= 100 else 1
        indicators.append(
            {
                "name": name,
                "value": round(value, digits),
                "unit": unit,
                "reference_range": [low, high],
            }
        )
    return indicators


def elevated_markers(indicators: list[dict[str, object]]) -> list[str]:
    """Tumour markers above their reference range."""
    return [
        str(i["name"])
        for i in indicators
        if i["name"] in _MARKERS and float(i["value"]) > float(i["reference_range"][1])  # type: ignore[index,arg-type]
    ]


def case_reports(
    rng: np.random.Generator, facts: CaseFacts, indicators: list[dict[str, object]]
) -> dict[str, str]:
    """Diagnostic, CT and endoscopy reports written the way clinicians phrase them."""
    length, width, extent = facts.tumor_size_mm
    borrmann = str(rng.choice(["Borrmann type II", "Borrmann type III"]))
    t_stage = facts.tnm.split("N")[0]
    depth = {"T3": "the subserosa", "T4a": "the serosa"}[t_stage]
    markers = elevated_markers(indicators)
    raised = (
        ", ".join(markers[:-1]) + f" and {markers[-1]}" if len(markers) > 1 else "".join(markers)
    )

    biopsy = str(rng.choice(["moderately differentiated", "poorly differentiated"]))
    ct = (
        f"Multiphase contrast-enhanced CT of the abdomen. Focal irregular wall thickening of the gastric "
        f"body along the greater curvature, measuring approximately {length:.0f} x {width:.0f} mm in plane "
        f"and {extent:.0f} mm in craniocaudal extent, with heterogeneous enhancement peaking in the "
        f"portal venous phase. The outer contour is blurred, suggesting tumour reaching {depth}. "
        f"{facts.node_count} perigastric lymph nodes along the greater curvature, the largest "
        f"{facts.node_short_axis_mm:.0f} mm in short axis. No liver lesion, no ascites, no peritoneal "
        f"nodularity. Impression: gastric body carcinoma, cTNM {facts.tnm}."
    )
    endoscopy = (
        f"Gastroscopy to the second part of the duodenum. In the mid gastric body on the greater "
        f"curvature there is an ulcerated mass ({borrmann}) about {length / 10:.0f} cm across, with a "
        f"fibrin-covered base and raised, irregular margins; it bleeds on contact. The surrounding "
        f"folds are converging and clubbed. Six biopsies taken. Oesophagus and duodenum normal."
    )
    diagnostic = (
        f"Histology: {biopsy} adenocarcinoma of the gastric body (Lauren intestinal type). "
        f"Clinical stage {facts.tnm} on CT; {raised} raised. Discussed at the multidisciplinary "
        f"meeting: neoadjuvant chemotherapy followed by D2 gastrectomy recommended."
    )
    return {"diagnostic": diagnostic, "ct": ct, "endoscopy": endoscopy}


def case_vqa(
    rng: np.random.Generator, facts: CaseFacts, indicators: list[dict[str, object]]
) -> list[dict[str, object]]:
    """3–5 questions per case whose answers follow from the phantom, the labs and the stage."""
    marker = str(rng.choice(elevated_markers(indicators)))
    candidates = _vqa_candidates(facts, indicators, marker)
    count = int(rng.integers(3, 6))
    picked = sorted(rng.permutation(len(candidates))[:count])
    items = []
    for position in picked:
        task, text, answer, decoys = candidates[int(position)]
        options, answer_index = shuffle_options(rng, answer, decoys)
        items.append(
            {
                "question": text,
                "options": list(options),
                "answer": "ABCDEF"[answer_index],
                "task": task,
            }
        )
    return items


def _vqa_candidates(
    facts: CaseFacts, indicators: list[dict[str, object]], marker: str
) -> list[tuple[str, str, str, list[str]]]:
    stages = ["T1N0M0", "T2N0M0", "T3N1M0", "T3N2M0", "T4aN2M0", "T4aN3M0", "T4bN2M1"]
    normal_markers = [m for m in _MARKERS if m not in elevated_markers(indicators)] or ["AFP"]
    return [
        (
            "tnm_classification",
            "What is the clinical TNM stage of this gastric cancer?",
            facts.tnm,
            stages,
        ),
        (
            "lesion_localization",
            "Where is the primary tumour located?",
            "Gastric body, greater curvature",
            ["Gastric body, lesser curvature", "Gastric antrum", "Cardia", "Fundus", "Pylorus"],
        ),
        (
            "vqa",
            "In which CT phase does the aorta enhance most strongly?",
            "Arterial",
            ["Non-contrast", "Arterial", "Portal venous", "Delayed"],
        ),
        (
            "vqa",
            "How many perigastric lymph nodes are visible on CT?",
            str(facts.node_count),
            ["0", "1", "2", "3", "4", "7"],
        ),
        (
            "vqa",
            "Which tumour marker is above its reference range?",
            marker,
            [*normal_markers, "Ferritin", "PSA"],
        ),
    ]
