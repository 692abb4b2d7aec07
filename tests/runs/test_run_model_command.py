"""`manage.py run_model`: the same run service, in-process, with a progress bar and JSON out."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import TestCase

from annotations.models import Run, RunStatus
from annotations.scoring import VLMEVAL_COMMIT
from tests.runs.helpers import make_run_benchmark
from tests.support.fake_openai import (
    FakeOpenAIServer,
    Reply,
    answer_letter,
    image_count,
    prompt_text,
)


class RunModelCommandTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.benchmark, cls.items = make_run_benchmark(8, name="endo-cli")

    def call(self, *args: str) -> str:
        out = io.StringIO()
        call_command("run_model", "endo-cli", *args, stdout=out, stderr=io.StringIO())
        return out.getvalue()

    def test_a_baseline_run_prints_its_id_and_accuracy_and_writes_json(self):
        path = self.tmp / "out.json"
        output = self.call("--baseline", "first", "--out", str(path))
        run = Run.objects.get()
        self.assertEqual(output.strip(), f"run {run.pk}: overall accuracy 0.2500 (8 items)")
        document = json.loads(path.read_text())
        self.assertEqual(document["run"], run.pk)
        self.assertEqual(document["overall"], 0.25)
        self.assertEqual(document["by"]["category"], {"Anatomy": 0.5, "Lesion": 0.0})
        self.assertEqual(len(document["predictions"]), 8)
        self.assertEqual(
            document["predictions"][0],
            {
                "index": 1,
                "prediction": "A",
                "vlmeval_letter": "A",
                "hit": False,
                "confidence": None,
            },
        )
        # A baseline has no log-probabilities: no confidence, no calibration; no twins, no cliff.
        self.assertIsNone(document["calibration"])
        self.assertEqual(document["cliffs"]["rows"], [])
        self.assertEqual(document["vlmeval_commit"], VLMEVAL_COMMIT)
        self.assertEqual(document["vlmeval"]["commit"], VLMEVAL_COMMIT)
        # VLMEvalKit's report_acc: one row ("none": no split column) with Overall and categories.
        self.assertEqual(
            document["vlmeval"]["table"],
            [{"split": "none", "Overall": 0.25, "Anatomy": 0.5, "Lesion": 0.0}],
        )
        self.assertNotIn("lenient", document)

    def test_a_model_endpoint_runs_through_the_openai_client(self):
        with FakeOpenAIServer(answer_letter("The answer is B.")) as server:
            output = self.call(
                "--base-url",
                server.base_url,
                "--model",
                "fake-vlm",
                "--concurrency",
                "3",
                "--limit",
                "5",
                "--no-image",
            )
            requests = server.requests
        run = Run.objects.get()
        self.assertEqual((run.total, run.status, run.with_image), (5, RunStatus.DONE, False))
        self.assertEqual(len(requests), 5)
        self.assertTrue(all(image_count(r) == 0 for r in requests))
        self.assertEqual({r["model"] for r in requests}, {"fake-vlm"})
        self.assertIn(f"run {run.pk}: overall accuracy 0.4000", output)
        self.assertEqual(run.endpoint.name, f"fake-vlm@127.0.0.1:{server.port}")

    def test_a_judge_reads_what_the_rules_cannot(self):
        with (
            FakeOpenAIServer(answer_letter("Probably the second finding listed")) as model,
            FakeOpenAIServer(answer_letter("B")) as judge,
        ):
            self.call(
                "--base-url", model.base_url, "--model", "fake-vlm", "--limit", "3",
                "--judge-base-url", judge.base_url, "--judge-model", "fake-judge",
            )  # fmt: skip
            asked = len(judge.requests)
        run = Run.objects.get()
        self.assertEqual(asked, 3)
        self.assertEqual(run.judge.model, "fake-judge")
        self.assertEqual(
            set(run.predictions.values_list("extracted", "judged_by_llm")), {("B", True)}
        )
        with self.assertRaises(CommandError):
            self.call("--baseline", "first", "--judge-model", "fake-judge")

    def test_out_shows_every_reading_of_every_reply_with_the_judge_and_the_lenient_score(self):
        replies = {1: "A", 2: "答案是C", 3: "Probably the second finding listed", 4: "(C) x"}

        def model(request_json, attempt_no):
            frame = int(prompt_text(request_json).split("frame ")[1].split("?")[0])
            return Reply(text=replies[frame])

        path = self.tmp / "out.json"
        with FakeOpenAIServer(model) as server, FakeOpenAIServer(answer_letter("B")) as judge:
            output = self.call(
                "--base-url", server.base_url, "--model", "fake-vlm", "--limit", "4",
                "--judge-base-url", judge.base_url, "--judge-model", "fake-judge",
                "--lenient", "--out", str(path),
            )  # fmt: skip
        rows = {row["index"]: row for row in json.loads(path.read_text())["predictions"]}
        # Gold answers cycle B, C, D, A from index 1.
        self.assertEqual(
            rows[1],
            {"index": 1, "prediction": "A", "vlmeval_letter": "A", "hit": False,
             "confidence": 1.0, "lenient_letter": "A", "lenient_hit": False},
        )  # fmt: skip
        # VLMEvalKit reads nothing in '答案是C' (no space) and asks the judge, who says B;
        # the lenient reading sees the C (gold), beside it: a lenient hit, not a hit.
        self.assertEqual(
            rows[2],
            {"index": 2, "prediction": "答案是C", "vlmeval_letter": None, "hit": False,
             "confidence": None, "judge_letter": "B", "judge_drawn": False, "lenient_letter": "C",
             "lenient_hit": True},
        )  # fmt: skip
        self.assertEqual((rows[3]["vlmeval_letter"], rows[3]["judge_letter"]), (None, "B"))
        self.assertEqual((rows[4]["vlmeval_letter"], rows[4]["hit"]), ("C", False))
        self.assertRegex(output, r"overall accuracy 0\.0000 \(4 items\); lenient 0\.2500")

    def test_it_needs_a_model_or_a_baseline_and_a_known_benchmark(self):
        with self.assertRaises(CommandError):
            self.call()
        with self.assertRaises(CommandError):
            call_command("run_model", "nope", "--baseline", "first")
        self.assertEqual(Run.objects.count(), 0)

    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path):
        self.tmp = tmp_path
