"""The triage page, its filters and the curator's switches."""

from __future__ import annotations

import json
from io import StringIO
from unittest import mock

from django.core.management import call_command
from django.test import TestCase
from django.urls import reverse

from annotations.models import Assignment, ItemStatus, Job, Suspicion, TriageSetting
from annotations.services.triage import benchmark_triage
from tests.factories import PASSWORD, make_benchmark, make_item, make_personas
from tests.triage.helpers import texture_jpeg


def broken_benchmark(name: str, n: int = 3):
    """n items, every one broken (answer letter beyond the options), plus one sound item."""
    benchmark = make_benchmark(name)
    items = [
        make_item(benchmark, index=i, image=texture_jpeg(1000 + i), answer="F") for i in range(n)
    ]
    items.append(make_item(benchmark, index=n, image=texture_jpeg(5000), question="Sound?"))
    # One item with an option pandas reads as empty, to filter on.
    items[0].options = ["Polyp", "NA", "Ulcer", "Bleeding"]
    items[0].save()
    return benchmark, items


class TriagePageTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = broken_benchmark("triaged")
        benchmark_triage(benchmark=cls.benchmark)
        # The sound item is disputed: the benchmark is in the adjudicator's scope.
        cls.items[-1].status = ItemStatus.DISPUTED
        cls.items[-1].save()
        cls.url = reverse("triage", args=[cls.benchmark.name])

    def login(self, who: str) -> None:
        self.client.login(username=self.people[who].username, password=PASSWORD)

    def test_a_curator_sees_the_suspects_most_suspect_first_with_their_reasons(self):
        self.login("curator")
        response = self.client.get(self.url)
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "Answer is not an option")
        self.assertContains(response, "Review the suspects first")
        page = list(response.context["page"])
        self.assertEqual(len(page), 3)  # the sound item is no suspect
        self.assertEqual(page[0].item_id, self.items[0].pk)  # two reasons rank it first

    def test_filtering_by_a_reason_keeps_only_its_suspects(self):
        self.login("adjudicator")
        response = self.client.get(self.url, {"reason": "empty_option"})
        self.assertEqual([s.item_id for s in response.context["page"]], [self.items[0].pk])
        self.assertContains(response, "NA")

    def test_an_htmx_filter_renders_only_the_results(self):
        self.login("curator")
        response = self.client.get(
            self.url, {"reason": "answer_out_of_range"}, HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="results",
        )  # fmt: skip
        self.assertContains(response, 'id="results"')
        self.assertNotContains(response, "<html")
        # The sidebar's reasons come along out of band, with the filtered reason highlighted.
        self.assertContains(response, 'id="reason-nav" hx-swap-oob="true"')
        self.assertContains(
            response, '<li class="selected">\n          <a href="?reason=answer_out_of_range'
        )
        self.assertNotContains(response, 'class="reason-all selected"')

    def test_the_page_runs_the_same_number_of_queries_for_more_suspects(self):
        self.login("curator")
        self.client.get(self.url)  # warm the session and the role cache
        with self.assertNumQueries(9):
            self.client.get(self.url)
        bigger, _items = broken_benchmark("bigger", n=15)
        benchmark_triage(benchmark=bigger)
        with self.assertNumQueries(9):
            self.client.get(reverse("triage", args=[bigger.name]))

    def test_text_from_the_file_is_escaped(self):
        self.items[1].question = "<script>alert(1)</script>"
        self.items[1].save()
        self.login("curator")
        response = self.client.get(self.url)
        self.assertNotContains(response, "<script>alert(1)</script>")
        self.assertContains(response, "&lt;script&gt;")

    def test_a_reviewer_gets_403(self):
        self.login("reviewer")
        self.assertEqual(self.client.get(self.url).status_code, 403)

    def test_an_outsider_gets_403(self):
        self.login("outsider")
        self.assertEqual(self.client.get(self.url).status_code, 403)

    def test_anonymous_users_are_sent_to_the_login_page(self):
        response = self.client.get(self.url)
        self.assertEqual(response.status_code, 302)
        self.assertIn(reverse("login"), response["Location"])

    def test_post_is_not_allowed_on_the_page(self):
        self.login("curator")
        self.assertEqual(self.client.post(self.url).status_code, 405)

    def test_an_unknown_benchmark_is_404(self):
        self.login("curator")
        self.assertEqual(self.client.get(reverse("triage", args=["nope"])).status_code, 404)

    def test_the_review_button_appears_only_on_the_viewers_open_assignments(self):
        self.people["curator"].groups.add(*self.people["reviewer"].groups.all())
        Assignment.objects.create(item=self.items[1], reviewer=self.people["curator"], slot=1)
        type(self.items[1]).objects.filter(pk=self.items[1].pk).update(status=ItemStatus.IN_REVIEW)
        self.login("curator")
        response = self.client.get(self.url)
        self.assertContains(response, reverse("review-item", args=[self.items[1].pk]))
        self.assertNotContains(response, reverse("review-item", args=[self.items[2].pk]))

    def test_the_index_lists_benchmarks_with_their_suspect_counts(self):
        self.login("curator")
        response = self.client.get(reverse("triage-index"))
        self.assertContains(response, self.url)
        self.assertEqual(self.client.post(reverse("triage-index")).status_code, 405)


class TriageSwitchTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = broken_benchmark("switched", n=1)
        cls.url = reverse("triage-suspects-first", args=[cls.benchmark.name])

    def test_a_curator_switches_suspects_first_on_and_off(self):
        self.client.login(username="dave", password=PASSWORD)
        response = self.client.post(self.url, {"suspects_first": "on"}, HTTP_HX_REQUEST="true")
        self.assertContains(response, 'id="suspects-first"')
        self.assertTrue(TriageSetting.objects.get(benchmark=self.benchmark).suspects_first)
        response = self.client.post(self.url, {})
        self.assertRedirects(response, reverse("triage", args=[self.benchmark.name]))
        self.assertFalse(TriageSetting.objects.get(benchmark=self.benchmark).suspects_first)

    def test_an_adjudicator_cannot_switch(self):
        self.client.login(username="carol", password=PASSWORD)
        self.assertEqual(self.client.post(self.url, {"suspects_first": "on"}).status_code, 403)
        self.assertFalse(TriageSetting.objects.filter(benchmark=self.benchmark).exists())

    def test_get_is_not_allowed_on_the_switch(self):
        self.client.login(username="dave", password=PASSWORD)
        self.assertEqual(self.client.get(self.url).status_code, 405)

    def test_anonymous_users_cannot_switch(self):
        response = self.client.post(self.url, {"suspects_first": "on"})
        self.assertEqual(response.status_code, 302)
        self.assertFalse(TriageSetting.objects.filter(benchmark=self.benchmark).exists())


class TriageRecomputeTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = broken_benchmark("recomputed", n=2)
        cls.url = reverse("triage-recompute", args=[cls.benchmark.name])

    def test_a_curator_queues_one_recomputation_after_commit(self):
        self.client.login(username="dave", password=PASSWORD)
        with (
            mock.patch("annotations.tasks.triage.triage_benchmark_task.delay") as delay,
            self.captureOnCommitCallbacks(execute=True),
        ):
            response = self.client.post(self.url)
            self.client.post(self.url)  # a second click reuses the waiting job
        self.assertRedirects(response, reverse("triage", args=[self.benchmark.name]))
        job = Job.objects.get(kind="triage", benchmark=self.benchmark)
        delay.assert_called_once_with(job.pk)

    def test_the_task_computes_and_stores_the_triage(self):
        from annotations.services.triage import triage_schedule
        from annotations.tasks.jobs import job_chunk_task
        from annotations.tasks.triage import triage_benchmark_task
        from tests.support.jobs import run_chunks

        with mock.patch("annotations.tasks.triage.triage_benchmark_task.delay"):
            job = triage_schedule(benchmark_id=self.benchmark.pk)
        triage_benchmark_task(job.pk)
        triage_benchmark_task(job.pk)  # redelivered: the claim fails, nothing happens twice
        chunks = run_chunks(job.pk)  # the images to hash, then the evidence combined
        self.assertEqual(len(chunks), 1)
        job_chunk_task(chunks[0])  # redelivered: the chunk is done, nothing happens twice
        job.refresh_from_db()
        self.assertEqual(job.status, "done")
        self.assertEqual((job.total, job.done), (3, 3))  # one image per item
        self.assertEqual(job.result["suspects"], 2)
        self.assertEqual(Suspicion.objects.filter(item__benchmark=self.benchmark).count(), 2)

    def test_a_finished_run_queues_a_triage_of_its_benchmark_once(self):
        from annotations.models import Run
        from annotations.services.runs import run_finish

        run = Run.objects.create(
            benchmark=self.benchmark, kind="model", label="m", status="running"
        )
        with mock.patch("annotations.tasks.triage.triage_benchmark_task.delay") as delay:
            with self.captureOnCommitCallbacks(execute=True):
                run_finish(run_id=run.pk)
            with self.captureOnCommitCallbacks(execute=True):
                run_finish(run_id=run.pk)  # already done: nothing more is queued
        job = Job.objects.get(kind="triage", benchmark=self.benchmark)
        delay.assert_called_once_with(job.pk)

    def test_an_adjudicator_cannot_recompute(self):
        self.client.login(username="carol", password=PASSWORD)
        self.assertEqual(self.client.post(self.url).status_code, 403)
        self.assertFalse(Job.objects.filter(kind="triage").exists())

    def test_get_is_not_allowed_on_recompute(self):
        self.client.login(username="dave", password=PASSWORD)
        self.assertEqual(self.client.get(self.url).status_code, 405)

    def test_anonymous_users_cannot_recompute(self):
        self.assertEqual(self.client.post(self.url).status_code, 302)
        self.assertFalse(Job.objects.filter(kind="triage").exists())


class TriageCommandTests(TestCase):
    def test_it_prints_a_summary_per_reason_and_writes_the_ranking(self):
        benchmark, items = broken_benchmark("commanded", n=2)
        out = StringIO()
        with self.settings():
            import tempfile
            from pathlib import Path

            folder = Path(tempfile.mkdtemp())
            call_command("triage", benchmark.name, "--out", str(folder / "r.json"), stdout=out,
                         verbosity=0)  # fmt: skip
            rows = json.loads((folder / "r.json").read_text())
        self.assertIn("answer_out_of_range", out.getvalue())
        self.assertIn("2 suspects among 3 items", out.getvalue())
        self.assertEqual([row["index"] for row in rows], [0, 1])
        self.assertEqual(list(rows[0]), ["index", "score", "reasons"])
        self.assertGreaterEqual(rows[0]["score"], rows[1]["score"])
        self.assertEqual(rows[0]["reasons"][0]["code"], "answer_out_of_range")

    def test_an_unknown_benchmark_is_an_error(self):
        from django.core.management.base import CommandError

        with self.assertRaises(CommandError):
            call_command("triage", "nope", stdout=StringIO())
