"""A clinician answering a human baseline never reads the gold answers of its benchmark: not on
the item, benchmark or case pages, not through the API, not through what gives them away
(review pages, predictions, leaderboards, triage, release files), whatever their other roles."""

from __future__ import annotations

from django.urls import reverse

from annotations.models import Case, Item, Release
from annotations.services.grading import grading_session_create
from annotations.services.releases import release_build, release_create
from annotations.services.triage import benchmark_triage
from tests.access.helpers import (
    AccessTestCase,
    assigned,
    end_baseline,
    open_baseline,
    people_with_combinations,
    review,
)
from tests.factories import make_item
from tests.releases.helpers import endo_benchmark
from tests.runs.helpers import make_done_run

GOLD = '<span class="letter">C</span>'


class BaselineClinicianWhoReviewsTests(AccessTestCase):
    """alice reviews the benchmark and answers a human baseline of it at the same time."""

    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        alice, bob = cls.people["reviewer"], cls.people["reviewer2"]
        cls.benchmark, cls.items = assigned("gold", [alice, bob], answer="C", family="gastricx")
        cls.item = cls.items[0]
        cls.case = Case.objects.create(
            benchmark=cls.benchmark,
            case_id="GX-GOLD-1",
            tnm="T3N1M0",
            reports={"diagnostic": "Ulcerated antral carcinoma, perigastric nodes enlarged."},
        )
        Item.objects.filter(pk=cls.item.pk).update(case=cls.case)
        cls.session = open_baseline(cls.benchmark, alice, cls.people["curator"])

    def test_the_item_api_gives_no_answer(self):
        url = f"/api/items/{self.item.pk}/"
        body = self.api("reviewer", url).json()
        self.assertEqual((body["answer"], body["question"]), (None, self.item.question))
        self.assertEqual(self.api("reviewer2", url).json()["answer"], "C")

    def test_the_item_page_marks_no_answer(self):
        url = reverse("item", args=[self.item.pk])
        page = self.page("reviewer", url)
        self.assertContains(page, "data-gold-hidden")
        self.assertNotContains(page, 'class="correct"')
        self.assertNotContains(page, reverse("item-history", args=[self.item.pk]))
        self.assertNotContains(page, reverse("review-item", args=[self.item.pk]))  # refused now
        self.assertContains(self.page("reviewer2", url), 'class="correct"')

    def test_the_benchmark_page_lists_no_answer(self):
        url = reverse("benchmark", args=[self.benchmark.name])
        page = self.page("reviewer", url)
        self.assertContains(page, self.item.question)
        self.assertNotContains(page, GOLD)
        self.assertContains(page, "data-gold-hidden")
        self.assertContains(self.page("reviewer2", url), GOLD)

    def test_the_case_api_gives_no_answer(self):
        url = f"/api/cases/{self.case.pk}/"
        self.assertEqual([i["answer"] for i in self.api("reviewer", url).json()["items"]], [None])
        self.assertEqual([i["answer"] for i in self.api("reviewer2", url).json()["items"]], ["C"])

    def test_the_case_api_and_page_give_no_stage_and_no_report(self):
        # The stage and the reports are the gold of the classification and report items.
        url = f"/api/cases/{self.case.pk}/"
        hers = self.api("reviewer", url).json()
        self.assertEqual((hers["tnm"], hers["reports"]), ("", {}))
        theirs = self.api("reviewer2", url).json()
        self.assertEqual(theirs["tnm"], "T3N1M0")
        self.assertIn("Ulcerated antral carcinoma", theirs["reports"]["diagnostic"])
        page = reverse("case", args=[self.case.pk])
        self.assert_hidden(self.page("reviewer", page), 200, "T3N1M0")
        self.assertNotContains(self.page("reviewer", page), "Ulcerated antral carcinoma")
        self.assertContains(self.page("reviewer2", page), "Ulcerated antral carcinoma")

    def test_her_reviews_wait_until_the_session_is_over(self):
        url = reverse("review-item", args=[self.item.pk])
        self.assert_hidden(self.page("reviewer", url), 403, GOLD)
        self.assert_hidden(self.htmx("reviewer", url), 403, GOLD)
        self.assertEqual(self.api("reviewer", "/api/queue/next/").status_code, 204)
        queue = self.page("reviewer", reverse("review-queue"))
        self.assertEqual(queue.status_code, 200)  # an empty queue, not a redirect to the item
        end_baseline(self.session)
        self.assertContains(self.page("reviewer", url), GOLD)
        self.assertEqual(self.api("reviewer", f"/api/items/{self.item.pk}/").json()["answer"], "C")

    def test_her_session_page_shows_the_question_without_its_answer(self):
        url = reverse("baseline", args=[self.session.pk])
        for response in (self.page("reviewer", url), self.htmx("reviewer", url)):
            self.assertContains(response, self.items[0].question)
            self.assertNotContains(response, 'class="correct"')

    def test_grading_on_the_benchmark_marks_no_gold_for_her(self):
        first = make_done_run(self.benchmark, self.items, label="one", answers={})
        second = make_done_run(self.benchmark, self.items, label="two", answers={1: "B"})
        session = grading_session_create(
            run_a=first, run_b=second, created_by=self.people["curator"]
        )
        url = reverse("grade", args=[session.pk])
        self.assertNotContains(self.page("reviewer", url), 'class="correct"')
        self.assertContains(self.page("reviewer2", url), 'class="correct"')


class CuratorInABaselineTests(AccessTestCase):
    """grace curates and answers a human baseline of the benchmark she curates: every page made
    of its gold answers is closed to her while the session runs."""

    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        grace = cls.people["curator_reviewer"]
        cls.benchmark = endo_benchmark(cls.people)
        items = list(cls.benchmark.items.order_by("source_index"))
        cls.model_run = make_done_run(cls.benchmark, items, label="model", answers={1: "B"})
        benchmark_triage(benchmark=cls.benchmark)
        cls.first = release_build(
            release=release_create(benchmark=cls.benchmark, name="Gold", version="1.0")
        )
        cls.second = release_build(
            release=release_create(benchmark=cls.benchmark, name="Gold", version="1.1")
        )
        cls.session = open_baseline(cls.benchmark, grace, cls.people["curator"])

    def gold_urls(self) -> list[str]:
        name, item = self.benchmark.name, self.benchmark.items.order_by("source_index").first()
        return [
            reverse("leaderboard", args=[name]),
            f"/api/benchmarks/{name}/leaderboard/",
            reverse("run", args=[self.model_run.pk]),
            reverse("run-calibration-csv", args=[self.model_run.pk]),
            reverse("run-cliffs-csv", args=[self.model_run.pk]),
            reverse("run-cliff-items", args=[self.model_run.pk]) + "?type=gaussian_noise",
            reverse("run-compare", args=[self.model_run.pk]),
            f"/api/runs/{self.model_run.pk}/",
            reverse("triage", args=[name]),
            f"/api/benchmarks/{name}/triage/",
            reverse("release-file", args=[self.first.pk, "Gold.tsv"]),
            reverse("release-diff", args=[self.second.pk]) + f"?against={self.first.pk}",
            reverse("robustness", args=[name]),
            reverse("agreement", args=[name]),
            f"/api/benchmarks/{name}/agreement/",
            reverse("item-edit", args=[item.pk]),
        ]

    def test_pages_made_of_gold_answers_are_refused_to_her(self):
        for url in self.gold_urls():
            if url.startswith("/api/"):
                response = self.api("curator_reviewer", url)
                self.assertEqual(response.status_code, 403, url)
                self.assertIn("human-baseline session", response.json()["detail"])
            else:
                response = self.page("curator_reviewer", url)
                self.assertContains(response, "human-baseline session", status_code=403)

    def test_their_partials_too(self):
        progress = self.htmx(
            "curator_reviewer",
            reverse("run", args=[self.model_run.pk]),
            HTTP_HX_TARGET="run-progress",
        )
        self.assertEqual(progress.status_code, 403)
        results = self.htmx(
            "curator_reviewer",
            reverse("triage", args=[self.benchmark.name]),
            HTTP_HX_TARGET="results",
        )
        self.assertEqual(results.status_code, 403)

    def test_the_release_page_itself_stays_open(self):
        response = self.page("curator_reviewer", reverse("release", args=[self.first.pk]))
        self.assertEqual(response.status_code, 200)

    def test_another_curator_and_grace_after_her_session_read_them(self):
        for url in self.gold_urls():
            client = self.api if url.startswith("/api/") else self.page
            self.assertEqual(client("curator", url).status_code, 200, url)
        end_baseline(self.session)
        for url in self.gold_urls():
            client = self.api if url.startswith("/api/") else self.page
            self.assertEqual(client("curator_reviewer", url).status_code, 200, url)
        self.assertTrue(Release.objects.filter(pk=self.first.pk, status="published").exists())


class AdjudicatorInABaselineTests(AccessTestCase):
    """frank adjudicates and answers a human baseline of a benchmark with a dispute of others."""

    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        alice, bob = cls.people["reviewer"], cls.people["reviewer2"]
        cls.benchmark, (cls.disputed,) = assigned("disputes", [alice, bob], items=1)
        review(cls.disputed, alice, "accept")
        cls.disputed = review(cls.disputed, bob, "reject", reason="ambiguous")
        make_item(cls.benchmark, index=5)
        cls.session = open_baseline(
            cls.benchmark, cls.people["reviewer_adjudicator"], cls.people["curator"]
        )

    def test_the_dispute_is_not_his_to_settle_while_the_session_runs(self):
        self.assertEqual(self.disputed.status, "disputed")
        listing = self.page("reviewer_adjudicator", reverse("adjudication"))
        self.assertNotContains(listing, reverse("adjudicate", args=[self.disputed.pk]))
        self.assertContains(
            self.page("adjudicator", reverse("adjudication")),
            reverse("adjudicate", args=[self.disputed.pk]),
        )
        for url in (
            reverse("adjudicate", args=[self.disputed.pk]),
            reverse("item-history", args=[self.disputed.pk]),
        ):
            self.assertEqual(self.page("reviewer_adjudicator", url).status_code, 403, url)
            self.assertEqual(self.htmx("reviewer_adjudicator", url).status_code, 403, url)
        reviews = self.api("reviewer_adjudicator", f"/api/items/{self.disputed.pk}/reviews/")
        self.assertEqual(reviews.status_code, 403)

    def test_after_the_session_he_may(self):
        end_baseline(self.session)
        url = reverse("adjudicate", args=[self.disputed.pk])
        self.assertEqual(self.page("reviewer_adjudicator", url).status_code, 200)
