"""The `tasks` block of run_model --out: its shape, and every value against a hand computation."""

from __future__ import annotations

import json

import pytest

from annotations.scoring.bootstrap import bootstrap_mean
from annotations.scoring.coco import SliceOutcome
from annotations.scoring.retrieval import cross_modal_ranks
from annotations.scoring.tasks import (
    TASK_KEYS,
    BoxOutcome,
    ChoiceOutcome,
    ReportOutcome,
    build_tasks_summary,
)
from annotations.scoring.text import corpus_bleu4, mean_rouge_l

VQA = [
    ChoiceOutcome("A", "A"),
    ChoiceOutcome("B", "B"),
    ChoiceOutcome("C", None),
    ChoiceOutcome("D", "D"),
]
LABEL_SETS = {"t": ["T1", "T2", "T3", "T4"], "n": ["N0", "N1"]}
CLASSIFICATION = [
    ChoiceOutcome("T1", "T1", "t"),
    ChoiceOutcome("T1", "T2", "t"),
    ChoiceOutcome("T2", "T2", "t"),
    ChoiceOutcome("T3", None, "t"),
    ChoiceOutcome("N0", "N0", "n"),
    ChoiceOutcome("N1", "N0", "n"),
]
REPORTS = [
    ReportOutcome("the cat is on the mat", "the cat sat on the mat", "ct"),
    ReportOutcome("a polyp in the antrum", "a polyp", "endoscopy"),
    ReportOutcome("gastric wall thickening", None, "ct"),
]
BOXES = [
    BoxOutcome((0, 0, 10, 10), (0, 0, 10, 5)),  # IoU 1/2: a hit at 0.5
    BoxOutcome((0, 0, 10, 10), None),  # no answer
    BoxOutcome((0, 0, 0, 4, 4, 4), (2, 2, 2, 6, 6, 6)),  # IoU 8/120: a miss
    BoxOutcome((0, 0, 0, 2, 2, 2), (0, 0, 0, 2, 2, 2)),  # IoU 1
]
# A 3D target asked on five slices (one beyond each end) and a 2D item's image.
SLICES = [
    SliceOutcome((7, 0), None, None),
    SliceOutcome((7, 1), (0, 0, 10, 10), (0, 0, 10, 10)),  # IoU 1
    SliceOutcome((7, 2), (0, 0, 10, 10), (0, 0, 10, 4)),  # IoU 0.4
    SliceOutcome((7, 3), (0, 0, 10, 10), None),  # missed
    SliceOutcome((7, 4), None, (0, 0, 5, 5)),  # a box where there is nothing
    SliceOutcome(8, (0, 0, 10, 10), (0, 0, 10, 8)),  # IoU 0.8
]
CASES = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
REPORT_VECTORS = [[1, 0.1, 0], [0, 1, 0.2], [0.6, 0.8, 0], [0, 0.6, 0.8]]


def summary(**overrides):
    arguments = {
        "vqa": VQA,
        "classification": CLASSIFICATION,
        "label_sets": LABEL_SETS,
        "reports": REPORTS,
        "localization": BOXES,
        "slices": SLICES,
        "retrieval": cross_modal_ranks(REPORT_VECTORS, CASES, [0, 0, 1, 2]),
        "resamples": 200,
        "seed": 1,
    }
    arguments.update(overrides)
    return build_tasks_summary(**arguments)


def value(metric: dict) -> float:
    return metric["value"]


def test_it_has_exactly_the_issues_tasks_and_keys_each_with_an_interval() -> None:
    block = summary()

    assert list(block) == [*TASK_KEYS, "definitions"]
    for task, keys in TASK_KEYS.items():
        for key in keys:
            metric = block[task][key]
            assert set(metric) == {"value", "ci95", "n"}
            assert f"{task}.{key}" in block["definitions"] or task != "localization"
            if key in ("coco_ap50", "coco_ap"):  # pycocotools' figures: no interval
                assert metric["ci95"] == [None, None] and metric["value"] is not None
                continue
            low, high = metric["ci95"]
            assert low <= metric["value"] <= high
    json.dumps(block, allow_nan=False)


def test_vqa_accuracy_counts_a_missing_answer_as_wrong() -> None:
    accuracy = summary()["vqa"]["accuracy"]

    assert (accuracy["value"], accuracy["n"]) == (0.75, 4)
    expected = bootstrap_mean([1, 1, 0, 1], resamples=200, seed=1)
    assert accuracy["ci95"] == [expected.low, expected.high]


def test_classification_is_macro_f1_per_field_over_its_label_set_then_averaged() -> None:
    block = summary()["classification"]
    # scikit-learn's default: t: T1 2/3, T2 2/3, T3 0, T4 (no support, never predicted) 0 -> 1/3
    # n: N0 (TP 1, FP 1) 2/3, N1 (FN 1) 0 -> 1/3; mean over the two fields -> 1/3
    assert value(block["by_field"]["t"]["macro_f1"]) == pytest.approx(1 / 3)
    assert value(block["by_field"]["n"]["macro_f1"]) == pytest.approx(1 / 3)
    assert value(block["macro_f1"]) == pytest.approx(1 / 3)
    # ours beside it: T4 left out -> 4/9; n 1/3; mean 7/18
    assert value(block["by_field"]["t"]["macro_f1_no_support"]) == pytest.approx(4 / 9)
    assert value(block["by_field"]["n"]["macro_f1_no_support"]) == pytest.approx(1 / 3)
    assert value(block["macro_f1_no_support"]) == pytest.approx(7 / 18)
    assert value(block["accuracy"]) == pytest.approx(3 / 6)
    assert value(block["by_field"]["t"]["accuracy"]) == pytest.approx(2 / 4)
    assert block["by_field"]["t"]["confusion"] == {
        "labels": ["T1", "T2", "T3", "T4"],
        "matrix": [[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
        "unlisted": [0, 0, 1, 0],
    }


def test_classification_needs_each_fields_label_set_and_labels_within_it() -> None:
    with pytest.raises(ValueError, match="no label set"):
        summary(label_sets={"t": LABEL_SETS["t"]})
    with pytest.raises(ValueError, match="outside the label set"):
        summary(classification=[ChoiceOutcome("T5", "T1", "t")])


def test_report_generation_scores_rouge_l_and_corpus_bleu4_with_the_signature() -> None:
    block = summary()["report_generation"]
    references = [o.reference for o in REPORTS]
    generated = [o.generated for o in REPORTS]

    assert value(block["rouge_l"]) == pytest.approx(mean_rouge_l(generated, references))
    # LCS F1 per report: 5/6; "a polyp" of 5 tokens: P 1, R 2/5 -> 4/7; no report: 0
    assert value(block["rouge_l"]) == pytest.approx((5 / 6 + 4 / 7 + 0) / 3)
    assert value(block["bleu4"]) == pytest.approx(corpus_bleu4(generated, references))
    assert block["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp")
    assert value(block["by_kind"]["endoscopy"]["rouge_l"]) == pytest.approx(4 / 7)
    assert block["by_kind"]["ct"]["rouge_l"]["n"] == 2


def test_localization_scores_mean_iou_and_ap50_at_one_operating_point() -> None:
    block = summary()["localization"]

    assert value(block["mean_iou"]) == pytest.approx((0.5 + 0 + 8 / 120 + 1) / 4)
    # 3 answers of equal score, 2 hits, 4 truths: precision 2/3 x recall 2/4
    assert value(block["ap50"]) == pytest.approx(2 / 3 * 2 / 4)
    two_d, three_d = block["by_dimension"]["2d"], block["by_dimension"]["3d"]
    assert value(two_d["mean_iou"]) == pytest.approx(0.25)
    assert value(two_d["ap50"]) == pytest.approx(1 * 1 / 2)
    assert value(three_d["ap50"]) == pytest.approx(1 / 2 * 1 / 2)


def test_localization_ap50_follows_model_confidences_when_given() -> None:
    outcomes = [
        BoxOutcome((0, 0, 10, 10), (0, 0, 10, 10), score=0.9),
        BoxOutcome((0, 0, 10, 10), (50, 50, 60, 60), score=0.8),
        BoxOutcome((0, 0, 10, 10), (0, 0, 10, 9), score=0.7),
    ]
    # hit, miss, hit: precision 1 to recall 1/3, then 2/3 to recall 2/3
    block = summary(localization=outcomes)["localization"]

    assert value(block["ap50"]) == pytest.approx(1 / 3 + 1 / 3 * 2 / 3)
    assert "3d" not in block["by_dimension"]


def test_retrieval_averages_both_directions_and_shows_each() -> None:
    block = summary()["retrieval"]
    # report -> case ranks 1, 3, 1, 1; case -> report ranks 1, 2, 1 (see test_retrieval)
    assert value(block["report_to_case"]["recall_at_1"]) == pytest.approx(3 / 4)
    assert value(block["case_to_report"]["recall_at_1"]) == pytest.approx(2 / 3)
    assert value(block["recall_at_1"]) == pytest.approx((3 / 4 + 2 / 3) / 2)
    assert value(block["recall_at_5"]) == pytest.approx(1.0)
    assert value(block["recall_at_10"]) == pytest.approx(1.0)
    assert value(block["median_rank"]) == pytest.approx(1.0)
    assert block["report_to_case"]["recall_at_1"]["n"] == 4
    assert block["case_to_report"]["recall_at_1"]["n"] == 3
    assert block["recall_at_1"]["n"] == 3


def test_tasks_without_items_keep_their_keys_with_null_values() -> None:
    block = build_tasks_summary(resamples=10)

    for task, keys in TASK_KEYS.items():
        for key in keys:
            assert block[task][key] == {"value": None, "ci95": [None, None], "n": 0}, key
    assert block["classification"]["by_field"] == {}
    assert block["localization"]["by_dimension"] == {}
    json.dumps(block, allow_nan=False)


def test_the_same_seed_gives_the_same_block() -> None:
    assert summary(seed=4) == summary(seed=4)
    assert summary(seed=4)["localization"] != summary(seed=5)["localization"]


def test_localization_reports_pycocotools_figures_and_iou_over_every_slice_asked() -> None:
    block = summary()["localization"]
    # Slices with a truth or a prediction: IoU 1, 0.4, 0 (missed), 0 (nothing there), 0.8.
    assert value(block["slice_iou"]) == pytest.approx((1 + 0.4 + 0 + 0 + 0.8) / 5)
    assert block["slice_iou"]["n"] == 5
    assert block["coco_counts"] == {"images": 6, "truths": 4, "detections": 4}
    # Four truths; detections: IoU 1 and 0.8 hit at 0.5, 0.4 and the empty slice's box miss.
    # All scores tie at 1: pycocotools orders detections stably, so its PR curve and the
    # 101-point interpolation decide the value; checked against pycocotools in
    # tests/scoring/test_coco.py, here only its range and name.
    assert 0 < value(block["coco_ap50"]) <= 0.5 and value(block["coco_ap"]) <= value(
        block["coco_ap50"]
    )
    assert block["coco_ap50"]["n"] == 6
