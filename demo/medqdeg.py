"""Synthetic MedQ-DEG-Bench TSV of CLEAN images in 7 modalities, with answerable questions.

Degraded twins are not written here: the app makes them with its own degradation engine after
import, so the demo shows the whole clean → degraded → pair-review path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from annotations.formats.medqdeg import MEDQDEG_COLUMNS as FORMAT_COLUMNS
from annotations.formats.taxonomy import MODALITIES
from annotations.formats.vlmeval import write_mcq_tsv
from annotations.imaging import phantoms
from annotations.imaging.synth import encode_jpeg, encode_png, endoscopy_scene, ultrasound_image
from annotations.imaging.window import apply_window
from demo.content import shuffle_options

# The file layout MedQ-DEG publishes, in its column order.
MEDQDEG_COLUMNS = list(FORMAT_COLUMNS)
_SOURCES = ("OmniMedVQA", "GMAI-MMBench", "SLAKE")
_MEDQDEG_FAMILY = 2

# (question, answer, decoys): a few per modality, each true of every image its generator draws.
QuestionSpec = tuple[str, str, tuple[str, ...]]
_MODALITY_DECOYS = ("CT", "MRI", "X-ray", "Ultrasound", "PET", "Endoscopy")
_QUESTIONS: dict[str, tuple[QuestionSpec, ...]] = {
    "CT": (
        (
            "Which body region does this CT image show?",
            "Abdomen",
            ("Brain", "Chest", "Pelvis", "Neck"),
        ),
        (
            "What are the two bright oval structures on either side of the spine?",
            "Contrast-enhanced kidneys",
            ("Adrenal masses", "Psoas muscles", "Renal cysts", "Para-aortic lymph nodes"),
        ),
        (
            "What is the bright round structure just anterior to the vertebral body?",
            "Contrast-enhanced aorta",
            ("Inferior vena cava", "Calcified lymph node", "Oesophagus", "Renal cyst"),
        ),
        (
            "What does the black area inside the stomach represent?",
            "Intraluminal gas",
            ("Fluid", "Fat", "Calcification", "Free air in the peritoneum"),
        ),
    ),
    "MRI": (
        ("Which organ is shown in this MRI slice?", "Brain", ("Liver", "Knee", "Heart", "Spine")),
        (
            "In which plane was this MRI slice acquired?",
            "Axial",
            ("Sagittal", "Coronal", "Oblique"),
        ),
        (
            "Which weighting does the contrast of this image correspond to?",
            "T1-weighted",
            ("T2-weighted", "FLAIR", "Diffusion-weighted", "Proton density"),
        ),
    ),
    "X-ray": (
        (
            "Which body part is shown in this radiograph?",
            "Chest",
            ("Abdomen", "Pelvis", "Skull", "Hand"),
        ),
        (
            "Which projection is this radiograph?",
            "Frontal (posteroanterior)",
            ("Lateral", "Oblique", "Apical lordotic"),
        ),
        (
            "Which structures appear as curved bright bands across both lung fields?",
            "Ribs",
            ("Pleural plaques", "Kerley B lines", "Pulmonary vessels"),
        ),
    ),
    "Ultrasound": (
        (
            "Which imaging modality produced this image?",
            "Ultrasound",
            _MODALITY_DECOYS,
        ),
    ),
    "Dermoscopy": (
        (
            "What kind of lesion is shown in this dermoscopic image?",
            "Pigmented melanocytic lesion",
            ("Vascular lesion", "Seborrhoeic keratosis with milia-like cysts", "Psoriatic plaque"),
        ),
        (
            "Which dermoscopic structure is visible inside the lesion?",
            "Pigment network",
            ("Arborising vessels", "Comedo-like openings", "Leaf-like areas"),
        ),
        (
            "Which imaging modality produced this image?",
            "Dermoscopy",
            ("Histopathology", "Endoscopy", "Fundus photography", "OCT"),
        ),
    ),
    "Histopathology": (
        (
            "Which stain was used for this slide?",
            "Haematoxylin and eosin (H&E)",
            (
                "Periodic acid-Schiff",
                "Masson trichrome",
                "Immunohistochemistry (Ki-67)",
                "Gram stain",
            ),
        ),
        (
            "What do the small purple round-to-oval structures represent?",
            "Cell nuclei",
            ("Red blood cells", "Mucin droplets", "Collagen fibres", "Calcifications"),
        ),
    ),
}


def write_medqdeg_tsv(path: Path, *, seed: int, n_items: int) -> Path:
    """Write a MedQ-DEG-format TSV of `n_items` clean images and questions to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        write_mcq_tsv(out, MEDQDEG_COLUMNS, medqdeg_rows(seed=seed, n_items=n_items))
    return path


def medqdeg_rows(*, seed: int, n_items: int) -> Iterator[dict[str, object]]:
    """Yield MedQ-DEG rows, cycling through the 7 modalities; every image is clean (L0).

    Each image carries two different questions, the second row reusing the first's image by
    index, as benchmarks do when several questions share a picture.
    """
    shared: dict[str, tuple[int, list[QuestionSpec]]] = {}
    for index in range(n_items):
        rng = np.random.default_rng([seed, _MEDQDEG_FAMILY, index])
        modality = MODALITIES[index % len(MODALITIES)]
        if modality in shared:
            image: object
            image, remaining = shared.pop(modality)
        else:
            image, specs = _GENERATORS[modality](rng)
            remaining = [specs[i] for i in rng.permutation(len(specs))]
            if len(remaining) > 1:
                shared[modality] = (index, remaining[1:])
        yield _row(rng, index, image, modality, remaining[0])


def _row(
    rng: np.random.Generator, index: int, image: object, modality: str, spec: QuestionSpec
) -> dict[str, object]:
    question, answer, decoys = spec
    options, answer_index = shuffle_options(rng, answer, decoys, int(rng.choice([4, 4, 5])))
    sources = _SOURCES if modality in ("CT", "MRI", "X-ray") else _SOURCES[:2]
    row: dict[str, object] = {
        "index": index,
        "image": image,
        "question": question,
        "answer": "ABCDE"[answer_index],
        "modality": modality,
        "degradation_type": "",
        "degradation_severity": "clean",
        "source": str(rng.choice(sources)),
    }
    for position, letter in enumerate("ABCDE"):
        row[letter] = options[position] if position < len(options) else ""
    return row


def _phantom_seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def _ct(rng: np.random.Generator) -> tuple[bytes, tuple[QuestionSpec, ...]]:
    hu = phantoms.ct_slice(384, seed=_phantom_seed(rng))
    return encode_png(apply_window(hu, 400, 40)), _QUESTIONS["CT"]


def _mri(rng: np.random.Generator) -> tuple[bytes, tuple[QuestionSpec, ...]]:
    raw = phantoms.mri_brain(320, seed=_phantom_seed(rng)).astype(np.float32)
    grey = np.clip(raw / max(float(np.percentile(raw, 99.5)), 1.0) * 255, 0, 255).astype(np.uint8)
    return encode_png(grey), _QUESTIONS["MRI"]


def _xray(rng: np.random.Generator) -> tuple[bytes, tuple[QuestionSpec, ...]]:
    return encode_png(phantoms.xray_chest(448, seed=_phantom_seed(rng))), _QUESTIONS["X-ray"]


def _ultrasound(rng: np.random.Generator) -> tuple[bytes, tuple[QuestionSpec, ...]]:
    lesion = str(rng.choice(["cyst", "solid"]))
    pixels, _ = ultrasound_image(rng, (384, 448), lesion=lesion)
    cyst = lesion == "cyst"
    specs = (
        *_QUESTIONS["Ultrasound"],
        (
            "What is the echogenicity of the round focal lesion?",
            "Anechoic" if cyst else "Hypoechoic",
            ("Anechoic", "Hypoechoic", "Hyperechoic", "Isoechoic"),
        ),
        (
            "Which acoustic artefact is seen deep to the lesion?",
            "Posterior acoustic enhancement" if cyst else "Posterior acoustic shadowing",
            (
                "Posterior acoustic enhancement",
                "Posterior acoustic shadowing",
                "Reverberation",
                "Comet-tail artefact",
            ),
        ),
        (
            "What is the most likely nature of the focal lesion?",
            "Simple cyst" if cyst else "Solid mass",
            ("Simple cyst", "Solid mass", "Calcification", "Gas bubble"),
        ),
    )
    return encode_png(pixels), specs


def _endoscopy(rng: np.random.Generator) -> tuple[bytes, tuple[QuestionSpec, ...]]:
    scene = str(rng.choice(["gastroscopy", "colonoscopy"]))
    finding = str(rng.choice(["polyp", "ulcer", "bleeding", "normal"]))
    frame = endoscopy_scene(rng, (384, 384), scene=scene, finding=finding)
    names = {
        "polyp": "Polyp",
        "ulcer": "Ulcer",
        "bleeding": "Active bleeding",
        "normal": "Normal mucosa",
    }
    specs = (
        (
            "What is the most likely finding in this endoscopic image?",
            names[finding],
            (*names.values(), "Angiectasia"),
        ),
        (
            "Which organ is being examined?",
            "Stomach" if scene == "gastroscopy" else "Colon",
            ("Stomach", "Colon", "Oesophagus", "Bladder"),
        ),
    )
    return encode_jpeg(frame.pixels, quality=90), specs


def _dermoscopy(rng: np.random.Generator) -> tuple[bytes, tuple[QuestionSpec, ...]]:
    pixels = phantoms.dermoscopy_image(384, seed=_phantom_seed(rng))
    return encode_jpeg(pixels, quality=90), _QUESTIONS["Dermoscopy"]


def _histopathology(rng: np.random.Generator) -> tuple[bytes, tuple[QuestionSpec, ...]]:
    pixels = phantoms.histopathology_tile(256, seed=_phantom_seed(rng))
    return encode_jpeg(pixels, quality=90), _QUESTIONS["Histopathology"]


_GENERATORS: dict[str, Callable[[np.random.Generator], tuple[bytes, tuple[QuestionSpec, ...]]]] = {
    "CT": _ct,
    "MRI": _mri,
    "X-ray": _xray,
    "Ultrasound": _ultrasound,
    "Endoscopy": _endoscopy,
    "Dermoscopy": _dermoscopy,
    "Histopathology": _histopathology,
}
