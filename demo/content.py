"""EndoBench-style taxonomy and question bank for synthetic frames.

Every question is derived from what `annotations.imaging.synth` actually drew (scene, finding,
its box, the number of instruments), so the gold answer is right for the picture shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotations.imaging.synth import SynthFrame

SCENES = ("gastroscopy", "colonoscopy", "capsule endoscopy", "surgery")

# category -> task -> subtask (EndoBench: 4 categories, 12 tasks, one secondary subtask each).
TAXONOMY: dict[str, dict[str, str]] = {
    "Anatomical Recognition": {
        "Organ Identification": "Organ",
        "Procedure Recognition": "Endoscopy Type",
        "Anatomical Structure Identification": "Mucosal Folds",
    },
    "Lesion Analysis": {
        "Lesion Classification": "Lesion Type",
        "Abnormality Detection": "Normal vs Abnormal",
        "Bleeding Detection": "Active Bleeding",
        "Lesion Quantification": "Lesion Count",
    },
    "Spatial Localization": {
        "Region Recognition": "Visual Prompt",
        "Lesion Localization": "Image Quadrant",
        "ROI Selection": "Bounding Box",
    },
    "Surgical Operation": {
        "Instrument Counting": "Instrument Count",
        "Instrument Recognition": "Instrument Type",
    },
}

# Source datasets per scene (21 in all, the public endoscopy datasets EndoBench draws from).
DATASETS: dict[str, tuple[str, ...]] = {
    "gastroscopy": ("HyperKvasir", "GastroVision", "Kvasir", "EDD2020"),
    "colonoscopy": (
        "Kvasir-SEG",
        "CVC-ClinicDB",
        "CVC-ColonDB",
        "ETIS-LaribPolypDB",
        "PolypGen",
        "SUN-SEG",
        "LDPolypVideo",
    ),
    "capsule endoscopy": ("Kvasir-Capsule", "KID", "WCEBleedGen", "WCE2025"),
    "surgery": (
        "Cholec80",
        "CholecT50",
        "EndoVis2017",
        "EndoVis2018",
        "M2CAI16-tool",
        "Endoscapes",
    ),
}

_ORGAN = {"gastroscopy": "Stomach", "colonoscopy": "Colon", "capsule endoscopy": "Small intestine"}
_PROCEDURE = {
    "gastroscopy": "Upper GI endoscopy (gastroscopy)",
    "colonoscopy": "Colonoscopy",
    "capsule endoscopy": "Wireless capsule endoscopy",
    "surgery": "Laparoscopic surgery",
}
_FOLDS = {
    "gastroscopy": "Gastric rugae",
    "colonoscopy": "Haustral folds",
    "capsule endoscopy": "Circular folds (plicae circulares)",
}
_FINDING_NAME = {
    "polyp": "Polyp",
    "ulcer": "Ulcer",
    "bleeding": "Active bleeding",
    "normal": "Normal mucosa",
}
_PLURAL = {"polyp": "polyps", "ulcer": "ulcers", "bleeding": "bleeding sites"}
_LESION_DECOYS = ("Angiectasia", "Erosion", "Lymphangiectasia", "Foreign body", "Diverticulum")
_PROMPT_WORDS = {
    "box": "inside the green box",
    "circle": "inside the green circle",
    "arrow": "indicated by the green arrow",
    "point": "marked by the green point",
}


@dataclass(frozen=True)
class Question:
    """One multiple-choice question about a frame; `prompt` asks for a mark drawn into it."""

    question: str
    options: tuple[str, ...]
    answer_index: int
    category: str
    task: str
    prompt: tuple[str, list[int]] | None = None

    @property
    def subtask(self) -> str:
        return TAXONOMY[self.category][self.task]

    @property
    def answer_letter(self) -> str:
        return "ABCDEF"[self.answer_index]

    @property
    def answer_text(self) -> str:
        return self.options[self.answer_index]


def category_of(task: str) -> str:
    """Return the EndoBench category a task belongs to."""
    for category, tasks in TAXONOMY.items():
        if task in tasks:
            return category
    raise KeyError(task)


def shuffle_options(
    rng: np.random.Generator, answer: str, decoys: list[str] | tuple[str, ...], n_options: int = 4
) -> tuple[tuple[str, ...], int]:
    """Shuffle `answer` among `n_options - 1` decoys (answer excluded); return options and its index."""
    pool = [d for d in dict.fromkeys(decoys) if d != answer]
    chosen = [pool[i] for i in rng.permutation(len(pool))[: n_options - 1]]
    options = [answer, *chosen]
    shuffled = tuple(options[i] for i in rng.permutation(len(options)))
    return shuffled, shuffled.index(answer)


def make_question(
    rng: np.random.Generator,
    task: str,
    question: str,
    answer: str,
    decoys: list[str] | tuple[str, ...],
    *,
    n_options: int = 4,
    prompt: tuple[str, list[int]] | None = None,
) -> Question:
    """A `Question` of `task` with shuffled options (see `shuffle_options`)."""
    options, answer_index = shuffle_options(rng, answer, decoys, n_options)
    return Question(
        question=question,
        options=options,
        answer_index=answer_index,
        category=category_of(task),
        task=task,
        prompt=prompt,
    )


def questions_for_frame(rng: np.random.Generator, frame: SynthFrame) -> list[Question]:
    """All questions whose answer this frame determines (the caller samples among them)."""
    if frame.scene == "surgery":
        return _surgical_questions(rng, frame)
    questions = [
        make_question(
            rng,
            "Organ Identification",
            "Which organ is shown in this endoscopic image?",
            _ORGAN[frame.scene],
            ["Stomach", "Colon", "Small intestine", "Esophagus", "Duodenum"],
        ),
        make_question(
            rng,
            "Procedure Recognition",
            "Which type of endoscopic examination was this image acquired with?",
            _PROCEDURE[frame.scene],
            list(_PROCEDURE.values()) + ["Bronchoscopy", "Cystoscopy"],
        ),
        make_question(
            rng,
            "Anatomical Structure Identification",
            "Which anatomical structure forms the ridges of mucosa seen in this image?",
            _FOLDS[frame.scene],
            list(_FOLDS.values()) + ["Valvulae conniventes of the esophagus", "Taeniae coli"],
        ),
        _abnormality_question(rng, frame),
        _bleeding_question(rng, frame),
    ]
    if frame.finding != "normal" and frame.finding_bbox is not None:
        questions += _lesion_questions(rng, frame)
    return questions


def _abnormality_question(rng: np.random.Generator, frame: SynthFrame) -> Question:
    answer = "No, the mucosa appears normal" if frame.finding == "normal" else "Yes"
    return make_question(
        rng,
        "Abnormality Detection",
        "Is there any abnormal finding in this image?",
        answer,
        ["Yes", "No, the mucosa appears normal", "Cannot be determined", "Only artefacts"],
    )


def _bleeding_question(rng: np.random.Generator, frame: SynthFrame) -> Question:
    answer = "Yes, active bleeding" if frame.finding == "bleeding" else "No bleeding"
    return make_question(
        rng,
        "Bleeding Detection",
        "Does this image show signs of bleeding?",
        answer,
        [
            "Yes, active bleeding",
            "No bleeding",
            "Old blood only (hematin)",
            "Blood clot without bleeding",
        ],
    )


def _lesion_questions(rng: np.random.Generator, frame: SynthFrame) -> list[Question]:
    name = _FINDING_NAME[frame.finding]
    bbox = list(frame.finding_bbox or [])
    height, width = frame.pixels.shape[:2]
    kind = str(rng.choice(["box", "circle", "arrow", "point"]))
    lesion_names = [v for k, v in _FINDING_NAME.items() if k != "normal"]
    n_options = int(rng.choice([4, 4, 5, 6]))
    return [
        make_question(
            rng,
            "Lesion Classification",
            "What is the most likely finding in this image?",
            name,
            lesion_names + ["Normal mucosa", *_LESION_DECOYS],
            n_options=n_options,
        ),
        make_question(
            rng,
            "Region Recognition",
            f"What is the finding {_PROMPT_WORDS[kind]}?",
            name,
            lesion_names + ["Normal mucosa", *_LESION_DECOYS],
            prompt=(kind, bbox),
        ),
        make_question(
            rng,
            "Lesion Localization",
            "In which part of the image is the lesion located?",
            _quadrant(bbox, width, height),
            ["Upper left", "Upper right", "Lower left", "Lower right"],
        ),
        make_question(
            rng,
            "Lesion Quantification",
            f"How many {_PLURAL[frame.finding]} are visible in this image?",
            "1",
            ["0", "1", "2", "3", "More than 3"],
        ),
        _roi_question(rng, name, bbox, width, height),
    ]


def _quadrant(bbox: list[int], width: int, height: int) -> str:
    cx, cy = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    vertical = "Upper" if cy < height / 2 else "Lower"
    return f"{vertical} {'left' if cx < width / 2 else 'right'}"


def _roi_question(
    rng: np.random.Generator, name: str, bbox: list[int], width: int, height: int
) -> Question:
    def norm(box: list[float]) -> str:
        x0, y0, x1, y1 = box
        return f"[{x0 / width:.2f}, {y0 / height:.2f}, {x1 / width:.2f}, {y1 / height:.2f}]"

    box_w, box_h = bbox[2] - bbox[0], bbox[3] - bbox[1]
    decoys = []
    # Decoys: the same-sized box moved to places that do not overlap the lesion.
    for _ in range(40):
        x0 = rng.uniform(0.08 * width, 0.92 * width - box_w)
        y0 = rng.uniform(0.08 * height, 0.92 * height - box_h)
        overlaps = x0 < bbox[2] and x0 + box_w > bbox[0] and y0 < bbox[3] and y0 + box_h > bbox[1]
        if not overlaps:
            decoys.append(norm([x0, y0, x0 + box_w, y0 + box_h]))
    return make_question(
        rng,
        "ROI Selection",
        f"Which bounding box [x0, y0, x1, y1] (relative to image size) contains the {name.lower()}?",
        norm([float(v) for v in bbox]),
        decoys,
    )


def _surgical_questions(rng: np.random.Generator, frame: SynthFrame) -> list[Question]:
    count = frame.instrument_count
    return [
        make_question(
            rng,
            "Instrument Counting",
            "How many surgical instruments are visible in this frame?",
            str(count),
            ["0", "1", "2", "3", "4"],
        ),
        make_question(
            rng,
            "Instrument Recognition",
            "Which instrument is visible in this laparoscopic frame?",
            "Grasper",
            ["Grasper", "Clip applier", "Irrigator", "Specimen bag", "Hook electrode", "Scissors"],
        ),
        make_question(
            rng,
            "Procedure Recognition",
            "Which type of procedure does this frame come from?",
            _PROCEDURE["surgery"],
            list(_PROCEDURE.values()) + ["Open surgery", "Bronchoscopy"],
        ),
    ]
