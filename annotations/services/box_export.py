"""Boxes for exports and localization scoring: release JSON blocks, COCO for 2D boxes, IoU/AP.

Releases call these (see ``services/releases``): ``case_boxes_for_export(item)`` gives the
``"boxes"`` value of a Gastric-X item in the release JSON, ``coco_for_benchmark`` writes the
2D boxes as COCO, and ``localization_scores`` scores predicted 3D/2D boxes against ours.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from django.db.models import Q

from annotations.formats.coco import write_coco
from annotations.imaging import ct
from annotations.models import Benchmark, Box, BoxLabel, Case, Image, Item, Volume
from annotations.scoring.boxes import average_precision, iou
from annotations.selectors.cases import phase_sorted

# Written into the manifest/JSON so that readers know what the numbers mean (FORMATS.md).
BOX_CONVENTION = (
    "voxel = [x0, y0, z0, x1, y1, z1], x = column, y = row, z = slice sorted by ascending "
    "position along the slice normal, end-exclusive; mm = patient LPS coordinates "
    "(origin + direction · (index × spacing)) of the centres of voxel (x0, y0, z0) and "
    "voxel (x1-1, y1-1, z1-1)"
)
AP_IOU_THRESHOLD = 0.5


def _case_of(item_or_case: Item | Case) -> Case | None:
    return item_or_case if isinstance(item_or_case, Case) else item_or_case.case


def case_boxes_for_export(item_or_case: Item | Case) -> list[dict[str, Any]]:
    """Per phase: the series geometry and its non-rejected 3D boxes (voxel and LPS mm).

    ``[]`` for an item without a case. The mm corners are recomputed from the geometry, so an
    export is right even if a stored value was ever stale.
    """
    case = _case_of(item_or_case)
    if case is None:
        return []
    volumes = phase_sorted(Volume.objects.filter(case=case).prefetch_related("boxes"))
    return [_phase_block(volume) for volume in volumes]


def _phase_block(volume: Volume) -> dict[str, Any]:
    geometry = ct.VolumeGeometry.of(volume)
    boxes = [
        {
            "label": box.label,
            "voxel": box.voxel,
            "mm": ct.box_voxel_to_mm(box.voxel, geometry),
            "state": box.state,
            "source": box.source,
        }
        for box in volume.boxes.all()
        if box.state not in Box.LEFT_OUT
    ]
    return {
        "phase": volume.phase,
        "shape_zyx": list(volume.shape),
        "spacing": list(volume.spacing),
        "origin": list(volume.origin),
        "direction": list(volume.direction),
        "series_uid": volume.series_uid,
        "boxes": boxes,
    }


def coco_for_benchmark(benchmark: Benchmark, out: IO[str] | IO[bytes]) -> None:
    """COCO JSON of the 2D boxes on the benchmark's images (item images and case endoscopy)."""
    image_filter = Q(items__benchmark=benchmark) | Q(
        pk__in=Case.objects.filter(benchmark=benchmark).values("endoscopy_image")
    )
    image_ids = Image.objects.filter(image_filter).values("pk")
    boxes = (
        Box.objects.filter(volume__isnull=True, image_id__in=image_ids)
        .exclude(state__in=Box.LEFT_OUT)
        .order_by("image_id", "id")
    )
    images = Image.objects.filter(pk__in=boxes.values("image_id")).order_by("pk")
    write_coco(
        out,
        (
            {
                "id": image.pk,
                "file_name": f"{image.sha256}.{image.extension}",
                "width": image.width,
                "height": image.height,
            }
            for image in images
        ),
        (
            {
                "image_id": box.image_id,
                "label": box.label,
                "x": box.x0,
                "y": box.y0,
                "width": box.x1 - box.x0,
                "height": box.y1 - box.y0,
            }
            for box in boxes
        ),
        [value for value, _ in BoxLabel.choices],
    )


def localization_scores(
    predictions: Iterable[Mapping[str, Any]], truths: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """IoU of each true box with its best prediction, and AP at IoU 0.5, per label and overall.

    Boxes are ``{"key": <case/phase or image id>, "label", "voxel": [6] or [4]}``; predictions
    also carry ``"score"`` (default 1.0). A malformed predicted box overlaps nothing.
    """
    predictions, truths = list(predictions), list(truths)
    per_box = [_best_iou(truth, predictions) for truth in truths]
    labels = sorted({t["label"] for t in truths})
    ap = {label: _ap(predictions, truths, label) for label in labels}
    scored = [value for value in ap.values() if not math.isnan(value)]
    return {
        "iou_per_box": per_box,
        "ap50_per_label": ap,
        "map50": sum(scored) / len(scored) if scored else None,
        "mean_iou": sum(b["iou"] for b in per_box) / len(per_box) if per_box else None,
    }


def _best_iou(truth: Mapping[str, Any], predictions: Sequence[Mapping[str, Any]]) -> dict:
    candidates = [
        iou(p["voxel"], truth["voxel"])
        for p in predictions
        if p["key"] == truth["key"]
        and p["label"] == truth["label"]
        and len(p["voxel"]) == len(truth["voxel"])
    ]
    return {
        "key": truth["key"],
        "label": truth["label"],
        "voxel": list(truth["voxel"]),
        "iou": max(candidates, default=0.0),
    }


def _ap(predictions: Sequence[Mapping[str, Any]], truths: Sequence[Mapping[str, Any]], label: str):
    chosen = [(t["key"], t["voxel"]) for t in truths if t["label"] == label]
    size = len(chosen[0][1])
    return average_precision(
        [
            (p["key"], p["voxel"], float(p.get("score", 1.0)))
            for p in predictions
            if p["label"] == label and len(p["voxel"]) == size
        ],
        chosen,
        iou_threshold=AP_IOU_THRESHOLD,
    )


def case_truth_boxes(case: Case) -> list[dict[str, Any]]:
    """Our accepted/proposed 3D boxes of a case as scoring truths, keyed ``case_id/phase``."""
    boxes = Box.objects.filter(volume__case=case).exclude(state__in=Box.LEFT_OUT)
    truths = []
    for box in boxes.select_related("volume"):
        assert box.volume is not None  # the filter is on its volume's case
        truths.append(
            {"key": f"{case.case_id}/{box.volume.phase}", "label": box.label, "voxel": box.voxel}
        )
    return truths
