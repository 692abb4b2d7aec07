"""The built-in baselines on classification items: the frequent-answer baseline counts a label
item's gold as the letter its label is asked with, so it answers the most frequent label."""

from __future__ import annotations

from django.test import TestCase

from annotations.models import Prediction
from annotations.services import runs as run_services
from tests.factories import make_benchmark, make_item

T_LABELS = ["T1", "T2", "T3", "T4"]


class LabelBaselineTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.benchmark = make_benchmark("gx-frequent", family="gastricx", label_sets={"t": T_LABELS})
        for truth in ("T3", "T1", "T3", "T4", "T3"):
            make_item(
                cls.benchmark, kind="label", question="What is the T stage?", options=[],
                answer=truth, target={"field": "t"}, task="classification", category="t",
            )  # fmt: skip

    def baseline_run(self, name: str):
        endpoint = run_services.endpoint_ensure_baseline(baseline=name)
        run = run_services.run_create(benchmark=self.benchmark, endpoint=endpoint, enqueue=False)
        return run_services.run_execute(run_id=run.pk, poll_seconds=0.05)

    def test_the_frequent_answer_baseline_answers_the_most_frequent_label(self):
        run = self.baseline_run("frequent")
        labels = set(Prediction.objects.filter(run=run).values_list("label", flat=True))
        assert labels == {"T3"}
        assert run.summary["tasks"]["classification"]["accuracy"]["value"] == 3 / 5

    def test_the_first_option_baseline_answers_the_first_label(self):
        run = self.baseline_run("first")
        labels = set(Prediction.objects.filter(run=run).values_list("label", flat=True))
        assert labels == {"T1"}
        assert run.summary["tasks"]["classification"]["accuracy"]["value"] == 1 / 5
