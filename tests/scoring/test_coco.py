"""Standard figures by their standard implementations: our COCO AP against pycocotools fed COCO
files, our macro_f1 against scikit-learn's f1_score with its defaults."""

from __future__ import annotations

import contextlib
import io
import json
import random
import warnings

import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import f1_score

from annotations.scoring.coco import SliceOutcome, coco_ap, slice_iou
from annotations.scoring.tasks import ChoiceOutcome, build_tasks_summary


def random_box(rng: random.Random) -> tuple[int, int, int, int]:
    x0, y0 = rng.randint(0, 40), rng.randint(0, 40)
    return x0, y0, x0 + rng.randint(2, 20), y0 + rng.randint(2, 20)


def pycocotools_stats(outcomes: list[SliceOutcome], tmp_path) -> tuple[float, float]:
    """AP@[.5:.95] and AP50 by pycocotools, from COCO files written here."""
    images, truths, found = [], [], []
    for number, outcome in enumerate(outcomes, start=1):
        images.append({"id": number, "width": 64, "height": 64, "file_name": f"{number}.png"})
        if outcome.truth:
            x0, y0, x1, y1 = outcome.truth
            truths.append({"id": len(truths) + 1, "image_id": number, "category_id": 7,
                           "bbox": [x0, y0, x1 - x0, y1 - y0], "area": (x1 - x0) * (y1 - y0),
                           "iscrowd": 0})  # fmt: skip
        if outcome.predicted:
            x0, y0, x1, y1 = outcome.predicted
            found.append({"image_id": number, "category_id": 7, "score": 1.0,
                          "bbox": [x0, y0, x1 - x0, y1 - y0]})  # fmt: skip
    (tmp_path / "gt.json").write_text(
        json.dumps({"images": images, "annotations": truths,
                    "categories": [{"id": 7, "name": "tumor"}]})
    )  # fmt: skip
    (tmp_path / "dt.json").write_text(json.dumps(found))
    with contextlib.redirect_stdout(io.StringIO()):
        ground = COCO(str(tmp_path / "gt.json"))
        evaluation = COCOeval(ground, ground.loadRes(str(tmp_path / "dt.json")), "bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    return float(evaluation.stats[0]), float(evaluation.stats[1])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_coco_ap_is_pycocotools_own(seed, tmp_path):
    rng = random.Random(seed)
    outcomes = []
    for number in range(30):
        truth = random_box(rng) if rng.random() < 0.7 else None
        if truth and rng.random() < 0.6:  # near the truth
            predicted = tuple(v + rng.randint(-3, 3) for v in truth)
            predicted = (predicted[0], predicted[1], max(predicted[2], predicted[0] + 1),
                         max(predicted[3], predicted[1] + 1))  # fmt: skip
        else:
            predicted = random_box(rng) if rng.random() < 0.5 else None
        outcomes.append(SliceOutcome(number, truth, predicted))

    ours = coco_ap(outcomes)
    ap, ap50 = pycocotools_stats(outcomes, tmp_path)
    assert (ours["ap"], ours["ap50"]) == (ap, ap50)
    assert ours["images"] == 30


def test_without_truths_coco_ap_is_undefined_and_without_answers_zero():
    assert coco_ap([SliceOutcome(1, None, (0, 0, 4, 4))])["ap50"] is None
    nothing = coco_ap([SliceOutcome(1, (0, 0, 4, 4), None)])
    assert (nothing["ap50"], nothing["ap"], nothing["detections"]) == (0.0, 0.0, 0)


def test_slice_iou_counts_a_box_without_counterpart_as_zero_and_skips_empty_slices():
    outcomes = [
        SliceOutcome(1, None, None),
        SliceOutcome(2, (0, 0, 10, 10), None),
        SliceOutcome(3, None, (0, 0, 10, 10)),
        SliceOutcome(4, (0, 0, 10, 10), (0, 0, 10, 5)),
    ]
    assert slice_iou(outcomes) == [0.0, 0.0, 0.5]


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_macro_f1_is_scikit_learns_default_over_the_label_set(seed):
    rng = random.Random(seed)
    labels = ["T1", "T2", "T3", "T4a", "T4b"]
    truth = [rng.choice(labels[:3]) for _ in range(25)]  # T4a, T4b never true
    predicted = [rng.choice([*labels[:4], None]) for _ in range(25)]  # T4b never given
    outcomes = [ChoiceOutcome(t, p, "t") for t, p in zip(truth, predicted, strict=True)]

    block = build_tasks_summary(classification=outcomes, label_sets={"t": labels}, resamples=10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedMetricWarning)
        expected = f1_score(
            truth, [p or "(none)" for p in predicted], labels=labels, average="macro"
        )
    assert any(issubclass(w.category, UndefinedMetricWarning) for w in caught)  # T4b: 0
    assert block["classification"]["macro_f1"]["value"] == pytest.approx(expected, abs=1e-12)
    no_support = f1_score(
        truth, [p or "(none)" for p in predicted], labels=labels[:4], average="macro"
    )  # T4b (neither true nor given) left out; T4a given, never true: 0
    assert block["classification"]["macro_f1_no_support"]["value"] == pytest.approx(
        no_support, abs=1e-12
    )
