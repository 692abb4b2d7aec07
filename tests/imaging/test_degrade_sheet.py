from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from annotations.imaging.degrade import KINDS
from annotations.imaging.sheet import (
    COLUMNS,
    GAP,
    LABEL_WIDTH,
    make_contact_sheet,
    sheet_dimensions,
)


def test_it_writes_a_contact_sheet_of_every_kind_and_level(tmp_path: Path) -> None:
    size = 48
    path = make_contact_sheet(tmp_path / "sheet.png", size=size, seed=0)
    with Image.open(path) as sheet:
        assert sheet.format == "PNG"
        assert sheet.size == sheet_dimensions(size)
        assert sheet.size[0] >= 3 * size and sheet.size[1] >= len(KINDS) * size
        pixels = np.asarray(sheet.convert("RGB"))
    tiles = pixels[24:, LABEL_WIDTH:]
    top = tiles[:size]
    clean, mild, severe = (
        top[:, c * (size + GAP) : c * (size + GAP) + size] for c in range(len(COLUMNS))
    )
    assert not np.array_equal(clean, mild)
    assert not np.array_equal(mild, severe)
