"""Localization by the field's standard: COCO AP as pycocotools computes it, per-slice IoU.

API:
- `SliceOutcome(image, truth, predicted)`: one 2D image asked: an item's own image, or one CT
  slice asked for a 3D target (`image` any hashable key, e.g. (item index, z)); `truth` the
  target's `(x0, y0, x1, y1)` on it (None: a slice beyond the box, where nothing is to be
  found); `predicted` the model's box there (None: no answer, or "none").
- `coco_ap(outcomes) -> {"ap50", "ap", "images", "truths", "detections"}`: pycocotools'
  `COCOeval(iouType="bbox")` over those images, one category, every predicted box a detection
  of score 1 (models give no confidence): `ap50` its AP at IoU 0.5, `ap` its AP@[.5:.95]
  (101-point interpolated precision, area "all", maxDets 100). None without any truth.
- `target_slices(index, truth, box, slice_boxes, slices) -> [SliceOutcome]`: the images asked
  for one localization item: a 2D target's image, or each slice `slices` of a 3D target (the
  truth on it or None beyond the box, the answer `slice_boxes[str(z)]`).
- `slice_iou(outcomes) -> list[float]`: per image with a truth or a prediction, its IoU (a box
  without a counterpart: 0); an image with neither is left out (nothing to overlap).

pycocotools' own evaluator is used, not a re-implementation: the figures are the field's.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotations.scoring.boxes import box_on_slice, iou_2d

__all__ = ["COCO_EVALUATOR", "SliceOutcome", "coco_ap", "slice_iou", "target_slices"]

COCO_EVALUATOR = (
    "pycocotools COCOeval(iouType='bbox'): 101-point interpolated AP, area all, maxDets 100; "
    "every predicted box a detection of score 1"
)


@dataclass(frozen=True)
class SliceOutcome:
    image: Hashable
    truth: Sequence[float] | None
    predicted: Sequence[float] | None


def _xywh(box: Sequence[float]) -> list[float]:
    x0, y0, x1, y1 = (float(v) for v in box)
    return [x0, y0, x1 - x0, y1 - y0]


def coco_ap(outcomes: Sequence[SliceOutcome]) -> dict[str, Any]:
    """pycocotools' AP50 and AP@[.5:.95] over the images of `outcomes` (see the docstring)."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    ids: dict[Hashable, int] = {}
    truths: list[dict[str, Any]] = []
    detections: list[dict[str, Any]] = []
    for outcome in outcomes:
        image_id = ids.setdefault(outcome.image, len(ids) + 1)
        if outcome.truth is not None:
            box = _xywh(outcome.truth)
            truths.append(
                {"id": len(truths) + 1, "image_id": image_id, "category_id": 1, "bbox": box,
                 "area": box[2] * box[3], "iscrowd": 0}
            )  # fmt: skip
        if outcome.predicted is not None:
            box = _xywh(outcome.predicted)
            if box[2] > 0 and box[3] > 0:
                detections.append(
                    {"image_id": image_id, "category_id": 1, "bbox": box, "score": 1.0}
                )
    counts = {"images": len(ids), "truths": len(truths), "detections": len(detections)}
    if not truths:
        return {"ap50": None, "ap": None, **counts}
    with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints its progress
        ground = COCO()
        ground.dataset = {
            "images": [{"id": number} for number in ids.values()],
            "annotations": truths,
            "categories": [{"id": 1, "name": "target"}],
        }
        ground.createIndex()
        found = ground.loadRes(detections) if detections else COCO()
        if not detections:
            found.dataset = {"images": ground.dataset["images"], "annotations": [],
                             "categories": ground.dataset["categories"]}  # fmt: skip
            found.createIndex()
        evaluation = COCOeval(ground, found, iouType="bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    ap, ap50 = (float(value) for value in evaluation.stats[:2])
    # -1 is pycocotools' "undefined"; with truths present it only means no detections at all.
    return {"ap50": max(ap50, 0.0), "ap": max(ap, 0.0), **counts}


def slice_iou(outcomes: Sequence[SliceOutcome]) -> list[float]:
    """IoU per image with a truth or a prediction (a box without a counterpart: 0)."""
    values = []
    for outcome in outcomes:
        if outcome.truth is None and outcome.predicted is None:
            continue
        if outcome.truth is None or outcome.predicted is None:
            values.append(0.0)
        else:
            values.append(iou_2d(outcome.truth, outcome.predicted))
    return values


def target_slices(
    index: Hashable,
    truth: Sequence[float],
    box: Sequence[float] | None,
    slice_boxes: Mapping[str, Any] | None,
    slices: Sequence[int],
) -> list[SliceOutcome]:
    """The 2D images asked for one localization item (see the module docstring)."""
    if len(truth) == 4:
        return [SliceOutcome(index, truth, box)]
    answers = slice_boxes or {}
    return [
        SliceOutcome((index, int(z)), box_on_slice(truth, int(z)), answers.get(str(z)))
        for z in slices
    ]
