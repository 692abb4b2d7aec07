"""A contact sheet of every degradation kind (clean, mild, severe) on synthetic images.

Made for eyes: a reviewer checks at a glance that each kind looks like what its name says.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from . import phantoms
from .degrade import KINDS, SEVERITIES, apply

LABEL_WIDTH = 190
HEADER_HEIGHT = 24
GAP = 4
COLUMNS = ("clean", *SEVERITIES)

# (modality, phantom, display window in stored units; None means the dtype's range)
_SUBJECTS: dict[str, tuple[str, Callable[..., np.ndarray], tuple[float, float] | None]] = {
    "ct": ("CT", phantoms.ct_slice, (-160.0, 240.0)),  # abdominal soft-tissue window
    # benchmark CT images are mostly windowed 8-bit PNGs: the generic kinds get one of those
    "ct8": ("CT", phantoms.ct_slice_8bit, None),
    "mri": ("MRI", phantoms.mri_brain, (0.0, 30000.0)),
    "histo": ("Histopathology", phantoms.histopathology_tile, None),
    "xray": ("X-ray", phantoms.xray_chest, None),
    "derm": ("Dermoscopy", phantoms.dermoscopy_image, None),
}
_GENERIC_SUBJECTS = ("xray", "derm", "ct8", "mri", "histo")


def sheet_dimensions(size: int) -> tuple[int, int]:
    """Width and height in pixels of a sheet whose tiles are `size` pixels square."""
    width = LABEL_WIDTH + len(COLUMNS) * (size + GAP)
    height = HEADER_HEIGHT + len(KINDS) * (size + GAP)
    return width, height


def contact_sheet(size: int = 160, *, seed: int = 0, image_size: int | None = None) -> Image.Image:
    """Render all kinds x (clean, mild, severe) into one image; phantoms are `image_size` px."""
    image_size = image_size or size
    sheet = Image.new("RGB", sheet_dimensions(size), "white")
    pen = ImageDraw.Draw(sheet)
    for column, title in enumerate(COLUMNS):
        pen.text((LABEL_WIDTH + column * (size + GAP) + 4, 6), title, fill="black")
    for row, kind in enumerate(KINDS):
        subject = _subject_for(kind, row)
        modality, make, window = _SUBJECTS[subject]
        clean = make(image_size, seed=seed)
        top = HEADER_HEIGHT + row * (size + GAP)
        pen.text((6, top + size // 2 - 12), kind, fill="black")
        pen.text((6, top + size // 2 + 2), f"on {modality}", fill="gray")
        versions = [clean] + [
            apply(clean, kind, s, seed=seed, modality=modality)[0] for s in SEVERITIES
        ]
        for column, version in enumerate(versions):
            tile = _display(version, window).resize((size, size), Image.Resampling.BILINEAR)
            sheet.paste(tile, (LABEL_WIDTH + column * (size + GAP), top))
    return sheet


def make_contact_sheet(out_path: Path, size: int = 160, *, seed: int = 0) -> Path:
    """Write the contact sheet as a PNG and return its path."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    contact_sheet(size, seed=seed).save(out_path, format="PNG")
    return out_path


def _subject_for(kind: str, row: int) -> str:
    if kind in ("limited_angle", "sparse_view", "low_dose"):
        return "ct"
    if kind in ("bias_field_artifact", "undersampling_artifact", "ghosting_artifact"):
        return "mri"
    if kind in ("blood_cell_artifact", "dark_spots_artifact", "bubble_artifact"):
        return "histo"
    return _GENERIC_SUBJECTS[row % len(_GENERIC_SUBJECTS)]


def _display(image: np.ndarray, window: tuple[float, float] | None) -> Image.Image:
    if window is None:
        return Image.fromarray(image)
    low, high = window
    scaled = np.clip((image.astype(np.float64) - low) / (high - low), 0.0, 1.0)
    return Image.fromarray(np.rint(scaled * 255).astype(np.uint8))
