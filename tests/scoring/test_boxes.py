from __future__ import annotations

import math

import pytest

from annotations.scoring.boxes import (
    ap_from_hits,
    average_precision,
    box3d_from_slice_boxes,
    box_on_slice,
    iou,
    iou_2d,
    iou_3d,
    mean_iou,
)


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


# The worked example of Padilla et al., "A Survey on Performance Metrics for Object-Detection
# Algorithms" (IWSSIP 2020), Object-Detection-Metrics README and samples/sample_2: 7 images,
# 15 truths, 24 detections (x, y, width, height, confidence), TP at IoU >= 0.3; published
# all-point AP 24.56 %. Its boxes count pixels inclusively (width w spans w + 1 columns), so they
# become (x, y, x + w + 1, y + h + 1) in our end-exclusive convention.
PADILLA_TRUTHS = {
    1: [(25, 16, 38, 56), (129, 123, 41, 62)],
    2: [(123, 11, 43, 55), (38, 132, 59, 45)],
    3: [(16, 14, 35, 48), (123, 30, 49, 44), (99, 139, 47, 47)],
    4: [(53, 42, 40, 52), (154, 43, 31, 34)],
    5: [(59, 31, 44, 51), (48, 128, 34, 52)],
    6: [(36, 89, 52, 76), (62, 58, 44, 67)],
    7: [(28, 31, 55, 63), (58, 67, 50, 58)],
}
PADILLA_DETECTIONS = {
    1: [(0.88, 5, 67, 31, 48), (0.70, 119, 111, 40, 67), (0.80, 124, 9, 49, 67)],
    2: [(0.71, 64, 111, 64, 58), (0.54, 26, 140, 60, 47), (0.74, 19, 18, 43, 35)],
    3: [
        (0.18, 109, 15, 77, 39),
        (0.67, 86, 63, 46, 45),
        (0.38, 160, 62, 36, 53),
        (0.91, 105, 131, 47, 47),
        (0.44, 18, 148, 40, 44),
    ],
    4: [
        (0.35, 83, 28, 28, 26),
        (0.78, 28, 68, 42, 67),
        (0.45, 87, 89, 25, 39),
        (0.14, 10, 155, 60, 26),
    ],
    5: [
        (0.62, 50, 38, 28, 46),
        (0.44, 95, 11, 53, 28),
        (0.95, 29, 131, 72, 29),
        (0.23, 29, 163, 72, 29),
    ],
    6: [(0.45, 43, 48, 74, 38), (0.84, 17, 155, 29, 35), (0.43, 95, 110, 25, 42)],
    7: [(0.48, 16, 20, 101, 88), (0.95, 33, 116, 37, 49)],
}


def _inclusive(x: float, y: float, w: float, h: float) -> tuple[float, float, float, float]:
    return (x, y, x + w + 1, y + h + 1)


def padilla_example() -> tuple[list, list]:
    truths = [(image, _inclusive(*box)) for image, boxes in PADILLA_TRUTHS.items() for box in boxes]
    detections = [
        (image, _inclusive(*box), score)
        for image, rows in PADILLA_DETECTIONS.items()
        for score, *box in rows
    ]
    return detections, truths


def test_it_reproduces_the_published_all_point_worked_example() -> None:
    detections, truths = padilla_example()
    # Their table: precision envelope 1 up to recall 1/15, 2/3 to 2/15, 6/14 to 6/15, 7/23 to 7/15
    # (A1 + A2 + A3 + A4 = 24.56 % from their rounded figures, 24.57 % exactly).
    expected = 1 / 15 * 1 + 1 / 15 * 2 / 3 + 4 / 15 * 6 / 14 + 1 / 15 * 7 / 23

    assert average_precision(detections, truths, iou_threshold=0.3) == pytest.approx(expected)


def test_grouped_ties_read_the_worked_example_at_each_distinct_score() -> None:
    detections, truths = padilla_example()
    # R (a hit) and Y (a miss) tie at 0.95: one point, precision 1/2 at recall 1/15, so the
    # envelope there is J's 2/3 (at recall 2/15); the rest is unchanged.
    expected = 2 / 15 * 2 / 3 + 4 / 15 * 6 / 14 + 1 / 15 * 7 / 23

    grouped = average_precision(detections, truths, iou_threshold=0.3, group_ties=True)
    shuffled = average_precision(detections[::-1], truths, iou_threshold=0.3, group_ties=True)

    assert grouped == pytest.approx(expected)
    assert shuffled == grouped
    # in input order instead, listing Y before R changes the score
    assert average_precision(detections[::-1], truths, iou_threshold=0.3) != pytest.approx(
        average_precision(detections, truths, iou_threshold=0.3)
    )


def test_a_model_without_confidences_is_one_operating_point() -> None:
    # 4 truths, 3 answers of equal score, 2 of them hits: precision 2/3 at recall 2/4
    assert ap_from_hits([1.0, 1.0, 1.0], [True, False, True], 4, group_ties=True) == pytest.approx(
        2 / 3 * 2 / 4
    )
    # ordered instead, the first answer's precision 1 lifts the envelope up to recall 1/4
    assert ap_from_hits([1.0, 1.0, 1.0], [True, False, True], 4) == pytest.approx(
        1 / 4 * 1 + 1 / 4 * 2 / 3
    )


def test_ap_from_hits_rejects_impossible_input() -> None:
    assert math.isnan(ap_from_hits([], [], 0))
    assert ap_from_hits([], [], 3) == 0.0
    with pytest.raises(ValueError, match="more hits"):
        ap_from_hits([1.0, 0.5], [True, True], 1)
    with pytest.raises(ValueError, match="hit flags"):
        ap_from_hits([1.0], [], 1)


def test_it_computes_mean_iou_over_items_of_both_kinds() -> None:
    truths = [(0, 0, 10, 10), (0, 0, 10, 10), (0, 0, 0, 4, 4, 4)]
    predictions = [(0, 0, 10, 5), None, (2, 2, 2, 6, 6, 6)]

    assert mean_iou(truths, predictions) == pytest.approx((0.5 + 0 + 8 / 120) / 3)
    assert math.isnan(mean_iou([], []))
    with pytest.raises(ValueError):
        mean_iou(truths, predictions[:2])


def test_it_cuts_a_3d_box_on_a_slice_end_exclusively() -> None:
    box = (10, 20, 5, 30, 40, 8)

    assert box_on_slice(box, 5) == (10, 20, 30, 40)
    assert box_on_slice(box, 7) == (10, 20, 30, 40)
    assert box_on_slice(box, 8) is None
    assert box_on_slice(box, 4) is None
    with pytest.raises(ValueError):
        box_on_slice((0, 0, 1, 1), 0)


def test_it_spans_per_slice_answers_with_a_3d_box() -> None:
    answers = {5: (12, 20, 30, 40), 6: None, 7: (10, 22, 31, 38)}

    assert box3d_from_slice_boxes(answers) == (10, 20, 5, 31, 40, 8)
    assert box3d_from_slice_boxes({3: None}) is None
    assert box3d_from_slice_boxes({}) is None
    with pytest.raises(ValueError):
        box3d_from_slice_boxes({1: (0, 0, 0, 1, 1, 1)})
