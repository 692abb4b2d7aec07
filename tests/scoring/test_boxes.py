from __future__ import annotations

import math

import pytest

from annotations.scoring.boxes import average_precision, iou, iou_2d, iou_3d


def test_it_computes_2d_iou_of_overlapping_boxes() -> None:
    # intersection 5 x 5 = 25, union 100 + 100 - 25 = 175
    assert iou_2d((0, 0, 10, 10), (5, 5, 15, 15)) == pytest.approx(25 / 175)


def test_it_computes_2d_iou_of_a_contained_box() -> None:
    # intersection = the small box, 2 x 2 = 4; union = the big box, 100
    assert iou_2d((0, 0, 10, 10), (2, 2, 4, 4)) == pytest.approx(0.04)


def test_it_gives_zero_iou_to_disjoint_or_touching_boxes() -> None:
    assert iou_2d((0, 0, 10, 10), (20, 20, 30, 30)) == 0.0
    assert iou_2d((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0


def test_it_gives_iou_one_to_identical_boxes() -> None:
    assert iou_2d((1.5, 2, 8, 9.5), (1.5, 2, 8, 9.5)) == pytest.approx(1.0)


def test_it_computes_3d_iou_of_voxel_ranges() -> None:
    # volumes 4^3 = 64 each, intersection [2, 4)^3 = 8, union 64 + 64 - 8 = 120
    assert iou_3d((0, 0, 0, 4, 4, 4), (2, 2, 2, 6, 6, 6)) == pytest.approx(8 / 120)


def test_it_treats_voxel_ranges_as_end_exclusive() -> None:
    # voxel (0,0,0) and voxel (1,1,1) share no voxel
    assert iou_3d((0, 0, 0, 1, 1, 1), (1, 1, 1, 2, 2, 2)) == 0.0
    # a one-slice box inside a two-slice box: 1 voxel of 2
    assert iou_3d((0, 0, 0, 1, 1, 1), (0, 0, 0, 1, 1, 2)) == pytest.approx(0.5)


def test_it_treats_an_inverted_box_as_empty() -> None:
    assert iou_2d((10, 10, 0, 0), (0, 0, 10, 10)) == 0.0
    assert iou_2d((10, 10, 0, 0), (10, 10, 0, 0)) == 0.0


def test_it_picks_2d_or_3d_by_box_length() -> None:
    assert iou((0, 0, 10, 10), (5, 5, 15, 15)) == pytest.approx(25 / 175)
    assert iou((0, 0, 0, 4, 4, 4), (2, 2, 2, 6, 6, 6)) == pytest.approx(8 / 120)
    with pytest.raises(ValueError):
        iou((0, 0, 10, 10), (0, 0, 0, 4, 4, 4))
    with pytest.raises(ValueError):
        iou_3d((0, 0, 10, 10), (0, 0, 10, 10))


TRUTHS = [
    ("img1", (0, 0, 10, 10)),
    ("img1", (20, 20, 30, 30)),
    ("img2", (0, 0, 10, 10)),
]
PREDICTIONS = [
    ("img1", (50, 50, 60, 60), 0.6),  # nothing there: FP
    ("img1", (0, 0, 10, 10), 0.9),  # first truth of img1: TP
    ("img2", (0, 0, 10, 9), 0.7),  # IoU 90/100 with img2's truth: TP
    ("img1", (1, 1, 10, 10), 0.8),  # IoU 0.81 but that truth is taken: duplicate, FP
    ("img1", (20, 20, 30, 31), 0.5),  # IoU 100/110 with the second truth: TP
]


def test_it_computes_all_point_average_precision_by_hand() -> None:
    # by score: TP FP TP FP TP -> precision 1, 1/2, 2/3, 1/2, 3/5 at recall 1/3 1/3 2/3 2/3 1
    # envelope: 1, 2/3, 2/3, 3/5, 3/5
    # AP = 1/3 * 1 + 1/3 * 2/3 + 1/3 * 3/5 = 0.755556
    assert average_precision(PREDICTIONS, TRUTHS) == pytest.approx(0.755556, abs=1e-6)


def test_it_applies_the_iou_threshold() -> None:
    # at 0.95 only the exact box matches: TP then four FP -> AP = 1/3 * 1
    ap = average_precision(PREDICTIONS, TRUTHS, iou_threshold=0.95)

    assert ap == pytest.approx(1 / 3)


def test_it_lets_each_detection_claim_its_best_truth() -> None:
    truths = [("img", (0, 0, 10, 10)), ("img", (3, 0, 13, 10))]
    predictions = [
        # IoU 80/120 with the first truth, 90/110 with the second: it must take the second...
        ("img", (2, 0, 12, 10), 0.9),
        # ...so that this one (IoU 70/130 with the first, 40/160 with the second) finds the first.
        ("img", (-3, 0, 7, 10), 0.8),
    ]

    assert average_precision(predictions, truths) == pytest.approx(1.0)


def test_it_computes_average_precision_for_3d_boxes() -> None:
    truths = [("case1", (0, 0, 0, 4, 4, 4)), ("case2", (0, 0, 0, 4, 4, 4))]
    predictions = [
        ("case1", (0, 0, 0, 4, 4, 3), 0.9),  # IoU 48/64 = 0.75: TP
        ("case2", (2, 2, 2, 6, 6, 6), 0.8),  # IoU 8/120: FP
    ]

    # precision 1 at recall 1/2, never reaches recall 1: AP = 1/2 * 1
    assert average_precision(predictions, truths) == pytest.approx(0.5)


def test_it_never_matches_a_detection_to_another_image() -> None:
    truths = [("img1", (0, 0, 10, 10))]
    predictions = [("img2", (0, 0, 10, 10), 0.9)]

    assert average_precision(predictions, truths) == 0.0


def test_it_scores_zero_without_detections_and_nan_without_truths() -> None:
    assert average_precision([], TRUTHS) == 0.0
    assert math.isnan(average_precision(PREDICTIONS, []))


def test_it_rejects_a_mix_of_2d_and_3d_boxes() -> None:
    with pytest.raises(ValueError):
        average_precision([("img1", (0, 0, 0, 4, 4, 4), 0.9)], TRUTHS)
