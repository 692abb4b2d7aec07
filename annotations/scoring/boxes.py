"""Box overlap and detection average precision, for 2D endoscopy boxes and 3D CT boxes alike.

A 2D box is `(x0, y0, x1, y1)`; a 3D box is `(x0, y0, z0, x1, y1, z1)` in voxel indices with
end-exclusive ranges (FORMATS.md, Gastric-X), so its volume is simply the product of the extents.
A box with an end before its start on some axis is empty: it overlaps nothing. That way one
malformed model output scores as a miss instead of aborting a whole run's evaluation.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence

Box = Sequence[float]
Prediction = tuple[Hashable, Box, float]
Truth = tuple[Hashable, Box]

_DIMENSIONS_BY_LENGTH = {4: 2, 6: 3}


def iou_2d(a: Box, b: Box) -> float:
    """Intersection over union of two `(x0, y0, x1, y1)` boxes; 0.0 when the union is empty."""
    return _iou(a, b, dimensions=2)


def iou_3d(a: Box, b: Box) -> float:
    """Intersection over union of two `(x0, y0, z0, x1, y1, z1)` end-exclusive voxel boxes."""
    return _iou(a, b, dimensions=3)


def iou(a: Box, b: Box) -> float:
    """IoU of two boxes of the same kind, 2D or 3D, told apart by their length (4 or 6)."""
    return _iou(a, b, dimensions=_dimensions(a, b))


def _dimensions(*boxes: Box) -> int:
    lengths = {len(box) for box in boxes}
    if len(lengths) != 1 or next(iter(lengths)) not in _DIMENSIONS_BY_LENGTH:
        raise ValueError(f"boxes must all have 4 (2D) or all 6 (3D) numbers, got {sorted(lengths)}")
    return _DIMENSIONS_BY_LENGTH[lengths.pop()]


def _iou(a: Box, b: Box, dimensions: int) -> float:
    if len(a) != 2 * dimensions or len(b) != 2 * dimensions:
        raise ValueError(f"a {dimensions}D box has {2 * dimensions} numbers")
    intersection = _size(
        [max(a[axis], b[axis]) for axis in range(dimensions)]
        + [min(a[axis + dimensions], b[axis + dimensions]) for axis in range(dimensions)],
        dimensions,
    )
    union = _size(a, dimensions) + _size(b, dimensions) - intersection
    return intersection / union if union > 0 else 0.0


def _size(box: Box, dimensions: int) -> float:
    return math.prod(max(0.0, box[axis + dimensions] - box[axis]) for axis in range(dimensions))


def average_precision(
    predictions: Sequence[Prediction],
    truths: Sequence[Truth],
    iou_threshold: float = 0.5,
) -> float:
    """All-point interpolated average precision (VOC 2010+ / COCO style) of scored detections.

    `predictions` are `(image_id, box, score)`, `truths` are `(image_id, box)`; boxes are all 2D or
    all 3D. Detections are taken by decreasing score (ties keep input order); each is a true
    positive when some still unmatched truth in its image overlaps it with IoU >= `iou_threshold`,
    and it then claims the best such truth, so every truth is matched at most once (COCO's greedy
    rule) and duplicates count as false positives. NaN when there are no truths (AP undefined).
    """
    if not truths:
        return math.nan
    all_boxes = [box for _, box in truths] + [box for _, box, _ in predictions]
    dimensions = _dimensions(*all_boxes)
    unmatched: dict[Hashable, list[Box]] = defaultdict(list)
    for image_id, box in truths:
        unmatched[image_id].append(box)
    ranked = sorted(predictions, key=lambda prediction: prediction[2], reverse=True)
    hits = [
        _claim_best_truth(box, unmatched[image_id], iou_threshold, dimensions)
        for image_id, box, _ in ranked
    ]
    return _interpolated_area(hits, len(truths))


def _claim_best_truth(box: Box, candidates: list[Box], threshold: float, dimensions: int) -> bool:
    overlaps = [_iou(box, truth, dimensions) for truth in candidates]
    if not overlaps or max(overlaps) < threshold:
        return False
    del candidates[overlaps.index(max(overlaps))]
    return True


def _interpolated_area(hits: Sequence[bool], n_truths: int) -> float:
    """Area under the precision envelope (precision made non-increasing in recall)."""
    precisions: list[float] = []
    recalls: list[float] = []
    true_positives = 0
    for rank, hit in enumerate(hits, start=1):
        true_positives += hit
        precisions.append(true_positives / rank)
        recalls.append(true_positives / n_truths)
    for i in range(len(precisions) - 2, -1, -1):
        precisions[i] = max(precisions[i], precisions[i + 1])
    area = 0.0
    previous_recall = 0.0
    for precision, recall in zip(precisions, recalls, strict=True):
        area += (recall - previous_recall) * precision
        previous_recall = recall
    return area
