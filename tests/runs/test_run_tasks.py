"""Gastric-X's five tasks through a real run: the real `openai` client against the loopback fake
server (chat for VQA, classification, reports and boxes; `/v1/embeddings` for retrieval), then
each task's scores checked against values computed by hand and against rouge-score/sacrebleu."""

from __future__ import annotations

import json
import tempfile
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import TestCase, override_settings

from annotations.models import Prediction, Run, RunStatus
from annotations.selectors.cases import memmaps
from annotations.services import runs as run_services
from annotations.services.runs.tasks import box_slices
from tests.runs.gastric_tasks import (
    REPORTS,
    chat_script,
    embeddings_script,
    make_task_benchmark,
)
from tests.runs.helpers import make_endpoint
from tests.support.fake_openai import FakeOpenAIServer, image_count, prompt_text

MEDIA = tempfile.mkdtemp(prefix="gxruns-media-")


def value(block: dict, name: str) -> float:
    return block[name]["value"]


@override_settings(MEDIA_ROOT=MEDIA)
class TaskRunTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        memmaps.clear()
        cls.made = make_task_benchmark()

    def run_all(self, **kwargs) -> tuple[Run, FakeOpenAIServer]:
        made = self.made
        with FakeOpenAIServer(chat_script(made), embeddings=embeddings_script(made)) as server:
            endpoint = make_endpoint(server.base_url)
            run = run_services.run_create(
                benchmark=made.benchmark, endpoint=endpoint, enqueue=False, **kwargs
            )
            run = run_services.run_execute(run_id=run.pk, poll_seconds=0.05)
        return run, server

    def test_every_kind_is_answered_once_and_read_for_its_task(self):
        run, server = self.run_all()
        self.assertEqual(run.status, RunStatus.DONE)
        self.assertEqual(run.failed, 0, list(Prediction.objects.exclude(error="").values("error")))
        self.assertEqual(Prediction.objects.filter(run=run).count(), 12)
        items = self.made.items
        labels = [
            Prediction.objects.get(run=run, item=item).label for item in items["classification"]
        ]
        self.assertEqual(labels, ["T1", "T3", "T3", "T4"])
        report = Prediction.objects.get(run=run, item=items["report_generation"][0])
        self.assertEqual(report.raw_text, REPORTS[0][1])
        self.assertIsNone(report.hit)
        endoscopy, ct = (Prediction.objects.get(run=run, item=i) for i in items["localization"])
        self.assertEqual(endoscopy.box, [4, 4, 10, 16])
        self.assertEqual(ct.box, [10, 10, 2, 30, 30, 6])
        self.assertEqual(
            ct.slice_boxes,
            {
                "1": None,
                "2": [10, 10, 30, 30],
                "3": [20, 10, 30, 30],
                "4": [10, 10, 30, 30],
                "5": [10, 10, 30, 30],
            },
        )
        ranks = [Prediction.objects.get(run=run, item=item) for item in items["retrieval"]]
        self.assertEqual([p.report_to_case_rank for p in ranks], [1, 1, 2])
        self.assertEqual([p.case_to_report_rank for p in ranks], [1, 1, 1])
        # Box prompts: one request per slice, each with its one slice image and its size.
        box_prompts = [r for r in server.requests if "Locate the tumor" in prompt_text(r)]
        self.assertEqual(len(box_prompts), 6)
        self.assertTrue(all(image_count(r) == 1 for r in box_prompts))
        self.assertTrue(any("48 x 40 pixels" in prompt_text(r) for r in box_prompts))
        # Retrieval went to /v1/embeddings: report texts and case images as data URLs.
        inputs = [text for r in server.embedding_requests for text in r["input"]]
        self.assertIn("Report of case two.", inputs)
        self.assertTrue(any(text.startswith("data:image/jpeg;base64,") for text in inputs))

    def test_the_scores_per_task_are_the_hand_computed_ones(self):
        run, _server = self.run_all()
        tasks = run.summary["tasks"]
        self.assertEqual(value(tasks["vqa"], "accuracy"), 1.0)
        classification = tasks["classification"]
        self.assertEqual(value(classification, "accuracy"), 0.75)
        # T1: 1/1 right; T2: missed (F1 0); T3: 1 right of 2 predicted (P 1/2, R 1, F1 2/3);
        # T4: right (F1 1) -> macro-F1 (1 + 0 + 2/3 + 1) / 4.
        self.assertAlmostEqual(value(classification, "macro_f1"), (1 + 0 + 2 / 3 + 1) / 4)
        confusion = classification["by_field"]["t"]["confusion"]
        self.assertEqual(confusion["labels"], ["T1", "T2", "T3", "T4"])
        self.assertEqual(confusion["matrix"][1], [0, 0, 1, 0])
        localization = tasks["localization"]
        # Endoscopy IoU 0.375 (a miss at 0.5); CT 3D IoU 3/4 (z 2..5 against 2..6).
        self.assertAlmostEqual(value(localization, "mean_iou"), (0.375 + 0.75) / 2)
        # One operating point: precision 1/2 at recall 1/2.
        self.assertAlmostEqual(value(localization, "ap50"), 0.25)
        self.assertAlmostEqual(value(localization["by_dimension"]["3d"], "mean_iou"), 0.75)
        self.assertAlmostEqual(value(localization["by_slice"], "mean_iou"), (1 + 0.5 + 1) / 3)
        self.assertAlmostEqual(value(localization["by_slice"], "ap50"), 1.0)
        retrieval = tasks["retrieval"]
        # report -> case ranks 1, 1, 2; case -> report ranks 1, 1, 1; means of the directions.
        self.assertAlmostEqual(value(retrieval, "recall_at_1"), (2 / 3 + 1) / 2)
        self.assertEqual(value(retrieval, "recall_at_5"), 1.0)
        self.assertEqual(value(retrieval, "median_rank"), 1.0)
        self.assertEqual(value(retrieval["report_to_case"], "median_rank"), 1.0)
        self.assertEqual(tasks["counts"]["retrieval"], 3)
        # VLMEvalKit's accuracy covers the multiple-choice items only (VQA + classification).
        self.assertEqual(run.summary["overall"]["n"], 5)
        self.assertAlmostEqual(run.summary["overall"]["accuracy"], 4 / 5)

    def test_report_scores_are_rouge_score_and_sacrebleu_computed_directly(self):
        from rouge_score import rouge_scorer
        from sacrebleu.metrics import BLEU

        run, _server = self.run_all()
        block = run.summary["tasks"]["report_generation"]
        scorer = rouge_scorer.RougeScorer(["rougeL"])
        expected_rouge = sum(
            scorer.score(reference, generated)["rougeL"].fmeasure
            for reference, generated in REPORTS
        ) / len(REPORTS)
        self.assertAlmostEqual(value(block, "rouge_l"), expected_rouge)
        bleu = BLEU().corpus_score([g for _r, g in REPORTS], [[r for r, _g in REPORTS]])
        self.assertAlmostEqual(value(block, "bleu4"), bleu.score / 100)
        self.assertIsNotNone(block["rouge_l"]["ci95"])

    def test_a_run_answered_again_keeps_one_prediction_per_item(self):
        run, _server = self.run_all()
        Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED)
        run.chunks.update(status=RunStatus.QUEUED)
        with FakeOpenAIServer(chat_script(self.made)) as server:
            run_services.run_execute(run_id=run.pk, poll_seconds=0.05)
        self.assertEqual(server.requests, [])
        self.assertEqual(Prediction.objects.filter(run=run).count(), 12)

    def test_a_baseline_answers_the_choices_and_fails_the_other_kinds_clearly(self):
        endpoint = run_services.endpoint_ensure_baseline(baseline="first")
        run = run_services.run_create(
            benchmark=self.made.benchmark, endpoint=endpoint, enqueue=False
        )
        run = run_services.run_execute(run_id=run.pk, poll_seconds=0.05)
        self.assertEqual(run.failed, 7)  # 2 reports, 2 boxes, 3 retrieval pairs
        labels = Prediction.objects.filter(run=run, item__kind="label").values_list(
            "label", flat=True
        )
        self.assertEqual(sorted(labels), ["T1"] * 4)
        error = Prediction.objects.filter(run=run, item__kind="box").first().error
        self.assertIn("multiple-choice and classification", error)

    def test_run_model_out_has_the_tasks_block_exactly(self):
        made = self.made
        out = Path(tempfile.mkdtemp()) / "scores.json"
        with FakeOpenAIServer(chat_script(made), embeddings=embeddings_script(made)) as server:
            call_command(
                "run_model",
                made.benchmark.name,
                "--base-url",
                server.base_url,
                "--model",
                "fake-model",
                "--out",
                str(out),
                stdout=StringIO(),
                verbosity=0,
            )
        document = json.loads(out.read_text())
        self.assertEqual(
            {task: set(metrics) for task, metrics in document["tasks"].items()},
            {
                "vqa": {"accuracy"},
                "classification": {"accuracy", "macro_f1", "macro_f1_no_support"},
                "report_generation": {"rouge_l", "bleu4"},
                "localization": {"mean_iou", "ap50", "coco_ap50", "coco_ap", "slice_iou"},
                "retrieval": {"recall_at_1", "recall_at_5", "recall_at_10", "median_rank"},
            },
        )
        self.assertEqual(document["tasks"]["classification"]["accuracy"]["value"], 0.75)
        self.assertEqual(set(document["tasks"]["vqa"]["accuracy"]), {"value", "ci95", "n"})
        rows = {row["index"]: row for row in document["predictions"]}
        self.assertEqual(rows[9]["box"], [10, 10, 2, 30, 30, 6])
        self.assertEqual(rows[2]["label"], "T1")


@pytest.mark.parametrize(
    ("z0", "z1", "size", "slices"),
    [
        (2, 5, 9, [1, 2, 3, 4, 5]),  # thin: every slice, and one beyond each end
        (0, 9, 9, [1, 4, 7]),  # the whole volume: nothing beyond
        (3, 12, 20, [1, 4, 7, 10, 13]),
    ],
)
def test_box_slices_cover_the_target_and_one_stride_beyond(z0, z1, size, slices):
    asked, spans = box_slices(z0, z1, size)
    assert list(asked) == slices
    assert all(start <= z < end for z, (start, end) in zip(asked, spans, strict=True))
