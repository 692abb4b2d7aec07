"""Box overlap and detection average precision, for 2D image/slice boxes and 3D CT boxes alike.

A 2D box is `(x0, y0, x1, y1)` in pixels, x the column and y the row; a 3D box is
`(x0, y0, z0, x1, y1, z1)` in voxel indices. Both are end-exclusive (FORMATS.md, Gastric-X):
pixel column c covers [c, c + 1), so an integer box covers exactly its pixels and its area is the
product of its extents; fractional model coordinates are measured the same way. A box with an end
before its start on some axis is empty: it overlaps nothing, so one malformed model output scores
as a miss instead of aborting a whole run's evaluation.

API:
- `iou_2d(a, b)`, `iou_3d(a, b)`, `iou(a, b)` (2D or 3D by length) -> float.
- `mean_iou(truths, predictions) -> float`: one truth and at most one prediction per item
  (None: no answer, IoU 0), mixing 2D and 3D items freely.
- `average_precision(predictions, truths, iou_threshold=0.5, *, group_ties=False) -> float`.
- `ap_from_hits(scores, hits, n_truths, *, group_ties=False) -> float`: the same area from
  already-decided detections (one box per item: hit = IoU >= threshold).
- `box_on_slice(box3d, z)`: the 2D box a 3D box cuts on slice z (None off its range);
  `box3d_from_slice_boxes({z: box2d})`: the 3D box spanning per-slice answers.

AP definition: PASCAL VOC 2010+ all-point interpolation, the area under the precision envelope
(precision made non-increasing in recall) at every recall the detections reach; not VOC 2007's
11 points nor COCO's 101. Detections are taken by decreasing score; each is a true positive when
some still unmatched truth of its image overlaps it with IoU >= the threshold, and it then claims
the best such truth (COCO's greedy rule), so duplicates count as false positives.
Equal scores: by default they keep their input order, as the VOC and COCO reference code sort
(a stable sort). With `group_ties=True` equal scores form one operating point (precision and
recall are read only after the whole tie, as scikit-learn's precision-recall curve does), so the
order of the input no longer matters; that is how a model that gives no confidence (every score
equal) is scored: one point, AP = precision x recall.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence

import numpy as np

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


def mean_iou(truths: Sequence[Box], predictions: Sequence[Box | None]) -> float:
    """Mean over items of the IoU of each truth with its prediction (None counts 0); NaN if empty."""
    if len(truths) != len(predictions):
        raise ValueError(f"{len(truths)} truths but {len(predictions)} predictions")
    if not truths:
        return math.nan
    scores = [
        0.0 if predicted is None else iou(truth, predicted)
        for truth, predicted in zip(truths, predictions, strict=True)
    ]
    return sum(scores) / len(scores)


def average_precision(
    predictions: Sequence[Prediction],
    truths: Sequence[Truth],
    iou_threshold: float = 0.5,
    *,
    group_ties: bool = False,
) -> float:
    """AP of scored detections at `iou_threshold` (see the module docstring for the definition).

    `predictions` are `(image_id, box, score)`, `truths` are `(image_id, box)`; boxes are all 2D or
    all 3D. NaN when there are no truths (AP undefined).
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
    scores = [score for _, _, score in ranked]
    return ap_from_hits(scores, hits, len(truths), group_ties=group_ties)


def _claim_best_truth(box: Box, candidates: list[Box], threshold: float, dimensions: int) -> bool:
    overlaps = [_iou(box, truth, dimensions) for truth in candidates]
    if not overlaps or max(overlaps) < threshold:
        return False
    del candidates[overlaps.index(max(overlaps))]
    return True


def ap_from_hits(
    scores: Sequence[float], hits: Sequence[bool], n_truths: int, *, group_ties: bool = False
) -> float:
    """All-point interpolated AP of detections already marked hit or miss; NaN without truths.

    Detections are sorted by decreasing score (stable); at most `n_truths` of them may be hits.
    """
    if len(scores) != len(hits):
        raise ValueError(f"{len(scores)} scores but {len(hits)} hit flags")
    if n_truths <= 0:
        return math.nan
    hit_array = np.asarray(hits, dtype=bool)
    if hit_array.sum() > n_truths:
        raise ValueError("more hits than truths")
    if hit_array.size == 0:
        return 0.0
    score_array = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-score_array, kind="stable")
    true_positives = np.cumsum(hit_array[order], dtype=np.float64)
    ranks = np.arange(1, len(order) + 1)
    if group_ties:
        # Keep only the last detection of each run of equal scores: one operating point per tie.
        sorted_scores = score_array[order]
        last_of_tie = np.append(sorted_scores[1:] != sorted_scores[:-1], True)
        true_positives, ranks = true_positives[last_of_tie], ranks[last_of_tie]
    return _interpolated_area(true_positives / ranks, true_positives / n_truths)


def _interpolated_area(precisions: np.ndarray, recalls: np.ndarray) -> float:
    """Area under the precision envelope (precision made non-increasing in recall)."""
    envelope = np.maximum.accumulate(precisions[::-1])[::-1]
    steps = np.diff(recalls, prepend=0.0)
    return float(np.sum(steps * envelope))


def box_on_slice(box: Box, z: int) -> tuple[float, float, float, float] | None:
    """The `(x0, y0, x1, y1)` a 3D voxel box covers on slice `z`, or None off its slice range."""
    if len(box) != 6:
        raise ValueError(f"a 3D box has 6 numbers, got {len(box)}")
    x0, y0, z0, x1, y1, z1 = box
    return (x0, y0, x1, y1) if z0 <= z < z1 else None


def box3d_from_slice_boxes(
    slice_boxes: Mapping[int, Box | None],
) -> tuple[float, float, float, float, float, float] | None:
    """The 3D box spanning the 2D boxes found on slices (None: nothing found on that slice).

    Its z range runs from the lowest to one past the highest slice with a box; None if no
    slice has one.
    """
    found = {z: box for z, box in slice_boxes.items() if box is not None}
    if not found:
        return None
    for box in found.values():
        if len(box) != 4:
            raise ValueError(f"a 2D box has 4 numbers, got {len(box)}")
    return (
        min(box[0] for box in found.values()),
        min(box[1] for box in found.values()),
        min(found),
        max(box[2] for box in found.values()),
        max(box[3] for box in found.values()),
        max(found) + 1,
    )
