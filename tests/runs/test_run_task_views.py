"""The run page's scores per task and prompts, and the leaderboard per task."""

from __future__ import annotations

import tempfile

from django.test import TestCase, override_settings
from django.urls import reverse

from annotations.models import Run, RunStatus
from annotations.selectors.cases import memmaps
from annotations.services import runs as run_services
from tests.factories import make_personas
from tests.runs.gastric_tasks import chat_script, embeddings_script, make_task_benchmark
from tests.runs.helpers import fast_passwords, make_endpoint
from tests.support.fake_openai import FakeOpenAIServer

MEDIA = tempfile.mkdtemp(prefix="gxruns-views-")


@fast_passwords
@override_settings(MEDIA_ROOT=MEDIA)
class TaskPagesTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        memmaps.clear()
        cls.people = make_personas()
        cls.made = make_task_benchmark("gx-pages")
        with FakeOpenAIServer(
            chat_script(cls.made), embeddings=embeddings_script(cls.made)
        ) as server:
            endpoint = make_endpoint(server.base_url, name="vlm-one")
            run = run_services.run_create(
                benchmark=cls.made.benchmark, endpoint=endpoint, enqueue=False
            )
            cls.model_run = run_services.run_execute(run_id=run.pk, poll_seconds=0.05)
        baseline = run_services.endpoint_ensure_baseline(baseline="first")
        other = run_services.run_create(
            benchmark=cls.made.benchmark, endpoint=baseline, enqueue=False
        )
        cls.baseline = run_services.run_execute(run_id=other.pk, poll_seconds=0.05)

    def setUp(self):
        self.client.force_login(self.people["curator"])

    def test_the_run_page_shows_each_task_with_its_interval_and_the_confusion_matrix(self):
        response = self.client.get(reverse("run", args=[self.model_run.pk]))
        self.assertEqual(response.status_code, 200)
        tasks = [scores.task for scores in response.context["task_scores"]]
        self.assertEqual(
            tasks, ["vqa", "classification", "report_generation", "localization", "retrieval"]
        )
        self.assertContains(response, 'data-testid="confusion-t"')
        self.assertContains(response, "Macro-F1")
        self.assertContains(response, "ROUGE-L")
        self.assertContains(response, "VOC AP@0.5 per item")  # ours, labelled as such
        self.assertContains(response, "COCO AP50")  # the field's, beside it
        self.assertContains(response, "COCO AP@[.5:.95]")
        self.assertContains(response, "Macro-F1, labels seen")
        self.assertContains(response, "Median rank")
        self.assertContains(response, "0.750")  # classification accuracy
        # The confusion row of T2: predicted T3 once.
        confusion = dict(response.context["task_scores"][1].confusions)["t"]
        self.assertEqual([c["n"] for c in confusion["rows"][1]["counts"]], [0, 0, 1, 0])
        self.assertTrue(confusion["rows"][0]["counts"][0]["diagonal"])

    def test_the_run_page_shows_the_prompt_of_every_task(self):
        response = self.client.get(reverse("run", args=[self.model_run.pk]))
        prompts = dict(response.context["task_prompts"])
        self.assertEqual(
            list(prompts),
            ["vqa", "classification", "report_generation", "localization", "retrieval"],
        )
        self.assertIn("[x0, y0, x1, y1]", prompts["localization"])
        self.assertIn("/v1/embeddings", prompts["retrieval"])
        self.assertContains(response, 'data-task="report_generation"')
        self.assertContains(response, "data-box")
        self.assertContains(response, "data-ranks")

    def test_a_multiple_choice_run_page_has_no_task_panels_and_no_extra_query(self):
        from tests.runs.helpers import make_done_run, make_run_benchmark

        benchmark, items = make_run_benchmark(4, name="endo-tasks")
        run = make_done_run(benchmark, items, label="mcq-only", answers={})
        with self.assertNumQueries(7):  # as before tasks: session, user, roles, run, ...
            response = self.client.get(reverse("run", args=[run.pk]))
        self.assertEqual(response.context["task_prompts"], [])
        self.assertEqual([s.task for s in response.context["task_scores"]], ["vqa"])

    def test_the_leaderboard_has_a_tab_per_task_and_ranks_runs_on_it(self):
        url = reverse("leaderboard", args=[self.made.benchmark.name])
        response = self.client.get(url)
        self.assertContains(response, 'data-task="localization"')
        response = self.client.get(url + "?task=classification")
        board = response.context["task_board"]
        self.assertEqual(
            [run.pk for run, _cells in board.rows], [self.model_run.pk, self.baseline.pk]
        )
        self.assertContains(response, 'data-testid="task-leaderboard"')
        # The baseline answered no box: it is not on the localization board.
        response = self.client.get(url + "?task=localization")
        self.assertEqual(
            [run.pk for run, _cells in response.context["task_board"].rows], [self.model_run.pk]
        )

    def test_the_retrieval_board_sorts_the_median_rank_lowest_first(self):
        worse = Run.objects.get(pk=self.model_run.pk)
        worse.pk = None
        worse.label = "worse"
        worse.summary = {
            "tasks": {
                "counts": {"retrieval": 3},
                "answered": {"retrieval": 3},
                "retrieval": {"median_rank": {"value": 3.0, "ci95": [1, 3], "n": 3}},
            }
        }
        worse.save()
        url = reverse("leaderboard", args=[self.made.benchmark.name])
        response = self.client.get(url + "?task=retrieval&sort=median_rank")
        labels = [run.label for run, _cells in response.context["task_board"].rows]
        self.assertEqual(labels, [self.model_run.label, "worse"])

    def test_the_task_leaderboard_query_count_does_not_grow_with_runs(self):
        url = reverse("leaderboard", args=[self.made.benchmark.name]) + "?task=retrieval"
        with self.assertNumQueries(6):  # session, user, roles, benchmark, kinds, runs
            self.client.get(url)
        Run.objects.filter(pk=self.baseline.pk).update(status=RunStatus.DONE)
        for _n in range(3):
            copy = Run.objects.get(pk=self.model_run.pk)
            copy.pk = None
            copy.save()
        with self.assertNumQueries(6):
            self.client.get(url)

    def test_reviewers_may_not_see_the_task_leaderboard(self):
        self.client.force_login(self.people["reviewer"])
        url = reverse("leaderboard", args=[self.made.benchmark.name]) + "?task=retrieval"
        self.assertEqual(self.client.get(url).status_code, 403)
