"""Options that are boxes: EndoBench's ROI-selection questions offer `[x0, y0, x1, y1]` options.

The published files do not say whether such coordinates are pixels or fractions of the image
size (both occur in grounding benchmarks), so the convention is read from the numbers of all the
item's options together: every number within [0, 1] → normalized (fractions of width and height);
otherwise pixels of the item's image. The reviewer is told which reading was made, and a box
that does not fit the image under that reading is reported, never silently clipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NORMALIZED = "normalized"
PIXELS = "pixels"

_NUMBER = r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*"
_BOX = re.compile(r"^\s*[\[(]" + ",".join([_NUMBER] * 4) + r"[\])]\s*$")


@dataclass(frozen=True)
class OptionBox:
    letter: str
    box: tuple[float, float, float, float]  # pixels of the image, x0 < x1, y0 < y1
    fits: bool  # inside the image


@dataclass(frozen=True)
class OptionBoxes:
    convention: str  # NORMALIZED or PIXELS
    boxes: tuple[OptionBox, ...]


def parse_box(text: str) -> tuple[float, float, float, float] | None:
    """`[x0, y0, x1, y1]` (or with parentheses) as four numbers, or None."""
    match = _BOX.match(text or "")
    if match is None:
        return None
    x0, y0, x1, y1 = (float(v) for v in match.groups())
    return (x0, y0, x1, y1)


def option_boxes(options: list[tuple[str, str]], width: int, height: int) -> OptionBoxes | None:
    """The options as boxes in the image's pixels, when every option is a box (at least two);
    None for an ordinary question."""
    parsed = [(letter, parse_box(text)) for letter, text in options if text]
    if len(parsed) < 2 or any(box is None for _, box in parsed):
        return None
    numbers = [v for _, box in parsed for v in box]
    normalized = all(0.0 <= v <= 1.0 for v in numbers)
    scale = (width, height, width, height) if normalized else (1, 1, 1, 1)
    boxes = []
    for letter, box in parsed:
        x0, y0, x1, y1 = (v * s for v, s in zip(box, scale, strict=True))
        x0, x1 = sorted((x0, x1))
        y0, y1 = sorted((y0, y1))
        fits = 0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height
        boxes.append(OptionBox(letter=letter, box=(x0, y0, x1, y1), fits=fits))
    return OptionBoxes(convention=NORMALIZED if normalized else PIXELS, boxes=tuple(boxes))
