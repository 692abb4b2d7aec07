"""Seeded label noise, duplicates and breakages are found by triage after real model runs.

Three models of about 80% accuracy answer the ORIGINAL (pre-flip) letters through the runs
machinery (run_create + run_execute against the loopback OpenAI-compatible server), as real
models do on label noise; a fourth run answers without the image.
"""

from __future__ import annotations

from django.test import TestCase

from annotations.models import Suspicion, TriageFlag, TriageSetting
from annotations.scoring.triage.types import ANSWERABLE_WITHOUT_IMAGE, MODEL_CONSENSUS
from annotations.services.triage import benchmark_triage
from tests.triage.helpers import TEXT_TASK, run_models, seed_noisy_benchmark


class SeededNoiseTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.seeded = seed_noisy_benchmark(n=500, flips=25)
        cls.runs = run_models(cls.seeded)
        cls.result = benchmark_triage(benchmark=cls.seeded.benchmark)
        cls.reasons = {s.key: {r.code: r for r in s.reasons} for s in cls.result.suspects}

    def test_the_runs_really_ran_at_about_80_percent(self):
        for run in self.runs[:3]:
            self.assertEqual(run.status, "done")
            self.assertEqual(run.completed, 500)
            self.assertGreater(run.summary["overall"]["accuracy"], 0.7)
            self.assertLess(run.summary["overall"]["accuracy"], 0.86)

    def test_the_top_tenth_holds_at_least_80_percent_of_the_flipped_items(self):
        top = [s.key for s in self.result.suspects[:50]]
        caught = self.seeded.flipped & set(top)
        self.assertGreaterEqual(len(caught) / len(self.seeded.flipped), 0.8, sorted(caught))
        for key in caught:
            self.assertIn(MODEL_CONSENSUS, self.reasons[key])

    def test_the_stored_ranking_is_the_computed_one(self):
        stored = dict(
            Suspicion.objects.filter(item__benchmark=self.seeded.benchmark).values_list(
                "item_id", "score"
            )
        )
        self.assertEqual(len(stored), len(self.result.suspects))
        for suspect in self.result.suspects:
            self.assertAlmostEqual(stored[suspect.key], suspect.score, places=5)

    def test_every_duplicate_pair_is_flagged_with_its_reason_on_both_items(self):
        for first, second, code in self.seeded.pairs:
            for key, other in ((first, second), (second, first)):
                reason = self.reasons.get(key, {}).get(code)
                self.assertIsNotNone(reason, f"item {key} lacks {code}")
                self.assertIn(other, [entry["item"] for entry in reason.evidence["others"]])

    def test_dev_test_leakage_weighs_more_than_a_duplicate_within_a_split(self):
        weights = {code: self.reasons[a][code].weight for a, _b, code in self.seeded.pairs}
        self.assertGreater(weights["split_leakage"], weights["duplicate_image"])

    def test_every_broken_item_is_flagged_with_the_right_reason(self):
        for key, code in self.seeded.broken.items():
            self.assertIn(code, self.reasons.get(key, {}), f"item {key}")
            self.assertTrue(TriageFlag.objects.filter(item_id=key, code=code).exists())

    def test_the_give_away_task_is_answerable_without_the_image(self):
        tasks = {row["task"]: row for row in self.result.summary["tasks"]}
        self.assertTrue(tasks[TEXT_TASK]["flagged"])
        self.assertFalse(any(row["flagged"] for task, row in tasks.items() if task != TEXT_TASK))
        tasks_of = {item.pk: item.task for item in self.seeded.items}
        weights = {
            tasks_of[key]: codes[ANSWERABLE_WITHOUT_IMAGE].weight
            for key, codes in self.reasons.items()
            if ANSWERABLE_WITHOUT_IMAGE in codes and key in tasks_of
        }
        self.assertGreater(weights[TEXT_TASK], max(w for t, w in weights.items() if t != TEXT_TASK))
        solved = [k for k, c in self.reasons.items() if ANSWERABLE_WITHOUT_IMAGE in c]
        self.assertGreater(sum(tasks_of[k] == TEXT_TASK for k in solved), 100)

    def test_the_summary_is_stored_with_the_setting(self):
        setting = TriageSetting.objects.get(benchmark=self.seeded.benchmark)
        self.assertEqual(setting.summary["items"], 500)
        self.assertEqual(len(setting.summary["runs"]), 4)
        self.assertGreaterEqual(setting.summary["by_code"]["model_consensus"], 20)
