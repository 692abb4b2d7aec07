"""Read one 2D box out of a model's free-text answer to a localization prompt.

API:
- `parse_box(text, *, width, height, scale="auto") -> ParsedBox | None`: `width` and `height`
  are the pixel size of the image the model was shown; the result is in that image's pixels.
- `ParsedBox.box`: `(x0, y0, x1, y1)` floats with x0 <= x1, y0 <= y1, inside the image; plus
  how it was read (`source`, `scale`) and what was mended (`swapped`, `clipped`).

What is understood, tried in this order (the first box found wins; several boxes -> the first):
1. JSON anywhere in the text (code fences or not; from the first 100 opening brackets): a list of four numbers `[x0, y0, x1, y1]`;
   an object with corner keys (`x0/y0/x1/y1`, `x1/y1/x2/y2`, `xmin/ymin/xmax/ymax`,
   `x_min/..`, `left/top/right/bottom`) or with a size (`x/y/w/h`, `x/y/width/height`, the
   top-left corner and the size); an object holding such a value under `bbox`, `bbox_2d`
   (Qwen2.5-VL), `box`, `bounding_box` or `coordinates`; a list of any of these.
   A bare four-number list is always read as corners, as the prompt asks (never COCO's x/y/w/h).
2. Two points: `(x0, y0), (x1, y1)`, also with a few words between them ("top-left (x0, y0),
   bottom-right (x1, y1)") and inside Qwen2-VL's `<|box_start|>...<|box_end|>`.
3. Four numbers in brackets or parentheses: `[12, 30, 80, 95]`, `(12,30,80,95)`, `[12 30 80 95]`.
4. Corner keys in prose: `x0=12, y0=30, x1=80, y1=95`, `xmin: 12 ...`.
5. Four comma-separated numbers alone: `12, 30, 80, 95`.
Reasoning inside `<think>...</think>` is skipped, and only the first 50,000 characters of the
rest are read. Anything else (refusals, "none", three or five
numbers, NaN/infinite values) gives None.

Scale: `"pixels"`, `"unit"` (0-1 of the width/height) or `"per_mille"` (0-1000, as Qwen2-VL
answers). `"auto"` reads Qwen2-VL's box tokens as per mille, four numbers all within [0, 1]
with at least one fraction as unit coordinates, and everything else as pixels (a model that
always answers 0-1000 must be configured as `"per_mille"`: 0-1000 cannot be told from pixels).

Mending: corners given in the wrong order are swapped per axis (`swapped`); coordinates outside
the image are clipped to it (`clipped`). A box that ends up with no area (e.g. entirely outside
the image) is still returned: the model did answer with a box, and it overlaps nothing.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_REPLY_CHARS", "SCALES", "ParsedBox", "box_number", "parse_box"]

SCALES = ("auto", "pixels", "unit", "per_mille")
# Replies are a few hundred characters; a runaway one is read this far (reasoning removed).
MAX_REPLY_CHARS = 50_000
# JSON is tried from at most this many opening brackets (each try may read to the end).
_MAX_JSON_STARTS = 100

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_QWEN_RE = re.compile(r"<\|box_start\|>(.*?)<\|box_end\|>", re.DOTALL)
# Two (x, y) points with at most a few words between them ("and bottom-right corner at").
_POINTS_RE = re.compile(
    rf"\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)[^()\[\]{{}}\d]{{0,40}}?"
    rf"\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)"
)
# The inside of one bracket pair (no nesting), then checked to be four numbers.
_BRACKET_GROUP_RE = re.compile(r"[\[(]([^\[\]()]{1,200})[\])]")
_NUMBER_FULL_RE = re.compile(_NUMBER)
# A maximal run of comma-separated numbers; only a run of exactly four is a box.
_NUMBER_RUN_RE = re.compile(rf"(?<![\w.]){_NUMBER}(?:\s*,\s*{_NUMBER})+(?![\w.])")
_KEY_VALUE_RE = re.compile(
    rf"\b(x0|y0|x1|y1|x2|y2|x_?min|y_?min|x_?max|y_?max|left|top|right|bottom)\b[\"']?\s*[:=]\s*"
    rf"({_NUMBER})",
    re.IGNORECASE,
)
_CORNER_KEYS = (
    ("x0", "y0", "x1", "y1"),
    ("x1", "y1", "x2", "y2"),
    ("xmin", "ymin", "xmax", "ymax"),
    ("left", "top", "right", "bottom"),
)
_SIZE_KEYS = (("x", "y", "w", "h"), ("x", "y", "width", "height"))
_WRAPPER_KEYS = ("bbox2d", "bbox", "box", "boundingbox", "coordinates")


@dataclass(frozen=True)
class ParsedBox:
    """A box read from an answer, in pixels of the image shown, and how it was read."""

    box: tuple[float, float, float, float]
    source: str
    scale: str
    swapped: bool = False
    clipped: bool = False


def parse_box(
    text: str | None, *, width: float, height: float, scale: str = "auto"
) -> ParsedBox | None:
    """The first box in `text`, in pixels of a `width` x `height` image; None if there is none."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if not (width > 0 and height > 0):
        raise ValueError(f"image size must be positive, got {width} x {height}")
    if not text:
        return None
    found = _find_numbers(_THINK_RE.sub(" ", text)[:MAX_REPLY_CHARS])
    if found is None:
        return None
    numbers, source = found
    used_scale = _resolve_scale(scale, numbers, source)
    return _to_pixels(numbers, used_scale, source, width, height)


def _find_numbers(text: str) -> tuple[list[float], str] | None:
    """Four corner numbers as the model wrote them, and which form they came in."""
    from_json = _first_json_box(text)
    if from_json is not None:
        return from_json, "json"
    qwen = _QWEN_RE.search(text)
    if qwen:
        points = _POINTS_RE.search(qwen.group(1))
        if points:
            return _floats(points.groups()), "qwen"
    points = _POINTS_RE.search(text)
    if points and _finite(_floats(points.groups())):
        return _floats(points.groups()), "points"
    for group in _BRACKET_GROUP_RE.finditer(text):
        numbers = _four_numbers(group.group(1))
        if numbers is not None:
            return numbers, "brackets"
    first_values: dict[str, str] = {}
    for key, number in _KEY_VALUE_RE.findall(text):
        first_values.setdefault(_key(key), number)  # several boxes in prose: the first one
    keyed = _box_from_mapping(first_values)
    if keyed is not None:
        return keyed, "keys"
    for run in _NUMBER_RUN_RE.finditer(text):
        numbers = _floats(re.findall(_NUMBER, run.group()))
        if len(numbers) == 4 and _finite(numbers):
            return numbers, "bare"
    return None


def _four_numbers(inside: str) -> list[float] | None:
    """`12, 30, 80, 95` or `12px 30px 80px 95px` as four numbers; None for anything else."""
    parts = [part for part in re.split(r"[,;\s]+", inside.replace("px", " ")) if part]
    if len(parts) != 4 or not all(_NUMBER_FULL_RE.fullmatch(part) for part in parts):
        return None
    numbers = _floats(parts)
    return numbers if _finite(numbers) else None


def _floats(values: Any) -> list[float]:
    return [float(value) for value in values]


def _finite(numbers: list[float]) -> bool:
    return all(math.isfinite(number) for number in numbers)


def _first_json_box(text: str) -> list[float] | None:
    decoder = json.JSONDecoder()
    starts = (position for position, char in enumerate(text) if char in "[{")
    for start in itertools.islice(starts, _MAX_JSON_STARTS):
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # deeply nested brackets must not crash a run
            continue
        box = _box_from_json(value, depth=0)
        if box is not None:
            return box
    return None


def _box_from_json(value: Any, depth: int) -> list[float] | None:
    if depth > 4:
        return None
    if isinstance(value, list):
        numbers = _number_list(value)
        if numbers is not None:
            return numbers
        for element in value:
            box = _box_from_json(element, depth + 1)
            if box is not None:
                return box
        return None
    if isinstance(value, dict):
        lowered = {_key(str(key)): item for key, item in value.items()}
        for key in _WRAPPER_KEYS:
            if key in lowered:
                box = _box_from_json(lowered[key], depth + 1)
                if box is not None:
                    return box
        return _box_from_mapping(lowered)
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _number_list(value: list[Any]) -> list[float] | None:
    if len(value) != 4:
        return None
    numbers = [_number(item) for item in value]
    return None if any(number is None for number in numbers) else numbers  # type: ignore[return-value]


def _key(name: str) -> str:
    # "x_min", "X-Min" and "xmin" are one key.
    return re.sub(r"[_\-\s]", "", name.lower())


def _box_from_mapping(mapping: dict[str, Any]) -> list[float] | None:
    normalised = {_key(str(key)): value for key, value in mapping.items()}
    for keys in _CORNER_KEYS:
        if all(key in normalised for key in keys):
            return _number_list([normalised[key] for key in keys])
    for x, y, w, h in _SIZE_KEYS:
        if all(key in normalised for key in (x, y, w, h)):
            numbers = _number_list([normalised[key] for key in (x, y, w, h)])
            if numbers is not None:
                return [numbers[0], numbers[1], numbers[0] + numbers[2], numbers[1] + numbers[3]]
    return None


def _resolve_scale(scale: str, numbers: list[float], source: str) -> str:
    if scale != "auto":
        return scale
    if source == "qwen":
        return "per_mille"
    within_unit = all(0.0 <= number <= 1.0 for number in numbers)
    has_fraction = any(not number.is_integer() for number in numbers)
    return "unit" if within_unit and has_fraction else "pixels"


def _to_pixels(
    numbers: list[float], scale: str, source: str, width: float, height: float
) -> ParsedBox:
    factor_x, factor_y = {
        "pixels": (1.0, 1.0),
        "unit": (width, height),
        "per_mille": (width / 1000, height / 1000),
    }[scale]
    x0, y0, x1, y1 = (
        numbers[0] * factor_x,
        numbers[1] * factor_y,
        numbers[2] * factor_x,
        numbers[3] * factor_y,
    )
    swapped = x0 > x1 or y0 > y1
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    clipped_box = (
        min(max(x0, 0.0), width),
        min(max(y0, 0.0), height),
        min(max(x1, 0.0), width),
        min(max(y1, 0.0), height),
    )
    return ParsedBox(
        box=clipped_box,
        source=source,
        scale=scale,
        swapped=swapped,
        clipped=clipped_box != (x0, y0, x1, y1),
    )


def box_number(value: float) -> float | int:
    """Pixels as the model gave them: whole numbers stay whole (JSON `10`, not `10.0`)."""
    value = round(float(value), 2)
    return int(value) if value.is_integer() else value
