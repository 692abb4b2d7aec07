"""Three Gastric-X cases written as real DICOM folders, the reviewers' corrections, and a fake
model (chat and embeddings) whose every answer is fixed, so that the scores of
`test_end_to_end` can be computed by hand.

The model answers some items right only against the reviewed content: the corrected VQA
letter, the corrected T stage, the adjudicated CT report and the corrected tumor box.
"""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotations.imaging.window import render_slice_png
from annotations.models import Case
from annotations.selectors.cases import volume_voxels
from annotations.services.gastricx_items import LABEL_QUESTIONS, REPORT_QUESTIONS
from annotations.services.images import image_bytes
from annotations.services.runs.tasks import CT_WINDOW
from tests.cases.builders import SMALL_GEOMETRY, case_document, write_case
from tests.factories import jpeg_bytes
from tests.support.fake_openai import Reply, embedding_inputs, image_digests, prompt_text

CASES = ("GX-E-1", "GX-E-2", "GX-E-3")
PHASES = {phase: SMALL_GEOMETRY[phase] for phase in ("arterial", "venous")}  # venous: 7x40x32
TNM = {"GX-E-1": "T3N1M0", "GX-E-2": "T2N0M0", "GX-E-3": "T4aN2M1"}
REPORTS = {
    "GX-E-1": {
        "diagnostic": "Adenocarcinoma of the gastric antrum, poorly differentiated, cT3N1M0.",
        "ct": "Wall thickening of the antrum with one enlarged perigastric node.",
        "endoscopy": "Ulcerated mass in the gastric antrum.",
    },
    "GX-E-2": {
        "diagnostic": "Adenocarcinoma of the gastric body, moderately differentiated, cT2N0M0.",
        "ct": "Focal wall thickening of the gastric body without enlarged nodes.",
        "endoscopy": "Elevated lesion on the lesser curvature of the body.",
    },
    "GX-E-3": {
        "diagnostic": "Signet ring cell carcinoma of the cardia with liver metastasis, cT4aN2M1.",
        "ct": "Cardia mass invading the serosa with perigastric nodes and a liver lesion.",
        "endoscopy": "Infiltrative mass at the cardia with a narrowed lumen.",
    },
}
VQA = {  # case: (question, options, imported answer)
    "GX-E-1": ("Where is the lesion of GX-E-1?", ["Cardia", "Body", "Antrum"], "B"),
    "GX-E-2": ("Which curvature carries the lesion of GX-E-2?", ["Lesser", "Greater"], "A"),
    "GX-E-3": ("Which organ holds the metastasis of GX-E-3?", ["Lung", "Liver", "Bone"], "B"),
}
TUMOR = [8, 10, 2, 28, 30, 6]  # every case's imported venous tumor box (voxels)

# --- what the reviewers change (all on GX-E-1, but the retrieval pair) -----------------------
VQA_CORRECTED = "C"  # reviewer: the lesion is in the antrum
T_CORRECTED = "T4a"  # reviewer: T3 -> T4a
BOX_CORRECTED = [4, 6, 1, 20, 30, 5]
CT_EDIT_A = "Wall thickening of the antrum with two enlarged perigastric nodes."
CT_EDIT_B = "Wall thickening of the antrum with one enlarged perigastric node. No ascites."
CT_ADJUDICATED = "Wall thickening of the antrum with two enlarged perigastric nodes. No ascites."
REJECTED_PAIR = ("GX-E-2", "diagnostic")  # reviewer2 rejects it; the adjudicator confirms it

# --- what the model answers -------------------------------------------------------------------
VQA_ANSWERS = {"GX-E-1": "C", "GX-E-2": "A", "GX-E-3": "A"}
PREDICTED_LABELS = {
    "GX-E-1": {"tnm": "T3N1M0", "t": "T4a", "n": "N1", "m": "M0"},
    "GX-E-2": {"tnm": "T3N1M0", "t": "T2", "n": "N1", "m": "M0"},
    "GX-E-3": {"tnm": "T4aN2M1", "t": "T4b", "n": "N2", "m": "M0"},
}
GENERATED = {
    "GX-E-1": {
        "diagnostic": "Adenocarcinoma of the gastric antrum, cT3N1M0.",
        "ct": CT_ADJUDICATED,
        "endoscopy": "Ulcerated mass in the antrum.",
    },
    "GX-E-2": {
        "diagnostic": "Adenocarcinoma of the gastric body, cT2N0M0.",
        "ct": "Wall thickening of the gastric body.",
        "endoscopy": "Elevated lesion on the lesser curvature.",
    },
    "GX-E-3": {
        "diagnostic": "Carcinoma of the cardia with liver metastasis.",
        "ct": "Cardia mass with perigastric nodes.",
        "endoscopy": "No lesion is seen.",
    },
}
# Box answers by (case, venous slice z); a slice not listed is answered "none".
# GX-E-1 is asked around the corrected box (z 1..5: slices 0, 2, 4, 6) and finds it exactly;
# GX-E-2 around z 2..6 (slices 1, 3, 5) finds a quarter of it (x 8..13 of 8..28): IoU 0.25;
# GX-E-3 finds nothing.
BOX_REPLIES = {
    ("GX-E-1", 2): "[4, 6, 20, 30]",
    ("GX-E-1", 4): "The tumor is at (4, 6, 20, 30).",
    ("GX-E-2", 3): "[8, 10, 13, 30]",
    ("GX-E-2", 5): '```json\n{"x0": 8, "y0": 10, "x1": 13, "y1": 30}\n```',
}
# Retrieval: every image of a case embeds as its case's axis; each report as below (cosine
# similarity with case k is the k-th component over the vector's length).
CASE_VECTORS = {"GX-E-1": [1.0, 0.0, 0.0], "GX-E-2": [0.0, 1.0, 0.0], "GX-E-3": [0.0, 0.0, 1.0]}
REPORT_VECTORS = {
    ("GX-E-1", "diagnostic"): [1.0, 0.1, 0.0],
    ("GX-E-1", "ct"): [1.0, 0.0, 0.2],
    ("GX-E-1", "endoscopy"): [0.3, 1.0, 0.0],  # nearer GX-E-2: rank 2
    ("GX-E-2", "diagnostic"): [0.0, 1.0, 0.1],
    ("GX-E-2", "ct"): [0.2, 1.0, 0.0],
    ("GX-E-2", "endoscopy"): [0.0, 0.2, 1.0],  # nearer GX-E-3: rank 2
    ("GX-E-3", "diagnostic"): [0.3, 0.0, 1.0],
    ("GX-E-3", "ct"): [0.0, 0.3, 1.0],
    ("GX-E-3", "endoscopy"): [0.5, 0.0, 1.0],
}


def write_cases(root: Path) -> Path:
    """The three case folders under `root` (real DICOM, two phases each); returns `root`."""
    for number, case_id in enumerate(CASES):
        question, options, answer = VQA[case_id]
        document = case_document(
            case_id,
            tnm=TNM[case_id],
            reports=dict(REPORTS[case_id]),
            boxes=[{"phase": "venous", "label": "tumor", "voxel": list(TUMOR)}],
            vqa=[{"question": question, "options": options, "answer": answer, "task": "vqa"}],
        )
        write_case(
            root,
            case_id,
            phases=PHASES,
            document=document,
            seed=11 + number,
            endoscopy=jpeg_bytes(color=(60 + 70 * number, 90, 50), size=(40, 32)),
        )
    return root


@dataclass
class FakeModel:
    """The model's chat and embeddings scripts, keyed by what it is sent: a case is known by
    the sha256 of its images (its endoscopy image, every slice of its CT)."""

    case_of_image: dict[str, str] = field(default_factory=dict)
    slice_of_image: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # inputs nobody planned an answer for

    @classmethod
    def of(cls, cases: list[Case]) -> FakeModel:
        model = cls()
        for case in cases:
            assert case.endoscopy_image is not None
            digest = _sha(image_bytes(case.endoscopy_image))
            model.case_of_image[digest] = case.case_id
            for volume in case.volumes.all():
                for z in range(volume.size_z):
                    png = render_slice_png(volume_voxels(volume), z, *CT_WINDOW)
                    model.case_of_image[_sha(png)] = case.case_id
                    model.slice_of_image[_sha(png)] = (case.case_id, volume.phase, z)
        slices = sum(v.size_z for case in cases for v in case.volumes.all())
        # Every image tells its case (and slice) apart, or the answers below would be guesses.
        assert len(model.case_of_image) == len(cases) + slices
        return model

    def chat(self, request_json: dict[str, Any], attempt_no: int) -> Reply:
        prompt, digests = prompt_text(request_json), image_digests(request_json)
        case = next((self.case_of_image[d] for d in digests if d in self.case_of_image), None)
        if case is None:
            self.unknown.append(prompt[:80])
            return Reply(text="none")
        if "Locate the" in prompt:
            where = self.slice_of_image[digests[0]]
            return Reply(text=BOX_REPLIES.get((where[0], where[2]), "none"))
        for kind, question in REPORT_QUESTIONS.items():
            if question in prompt:
                return Reply(text=GENERATED[case][kind])
        for label_field, question in LABEL_QUESTIONS.items():
            if question in prompt:
                letters = {text: letter for letter, text in _OPTION.findall(prompt)}
                return Reply(text=letters[PREDICTED_LABELS[case][label_field]])
        if VQA[case][0] in prompt:
            return Reply(text=VQA_ANSWERS[case])
        self.unknown.append(prompt[:80])
        return Reply(text="none")

    def embeddings(self, request_json: dict[str, Any], attempt_no: int) -> Reply:
        texts = {text: key for key, text in _report_texts().items()}
        vectors = []
        for text in embedding_inputs(request_json):
            if text.startswith("data:"):
                digest = _sha(base64.b64decode(text.split(";base64,", 1)[1]))
                case = self.case_of_image.get(digest)
                vector = CASE_VECTORS[case] if case else None
            else:
                vector = REPORT_VECTORS[texts[text]] if text in texts else None
            if vector is None:
                self.unknown.append(text[:80])
            vectors.append(vector or [1.0, 1.0, 1.0])
        return Reply(vectors=vectors)


_OPTION = re.compile(r"^([A-Z])\. (.*)$", re.MULTILINE)


def _report_texts() -> dict[tuple[str, str], str]:
    return {
        (case, kind): text for case, reports in REPORTS.items() for kind, text in reports.items()
    }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
