"""Blinding holds for every role: while a person reviews an item they read no other review of it,
through the page, the htmx partial or the API, whatever other roles they hold (issue 17)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from annotations.models import Item, ItemStatus, Suspicion, TriageFlag
from annotations.services.pair_review import pair_review_submit
from annotations.services.review import assignments_create
from tests.access.helpers import (
    SECRET,
    AccessTestCase,
    assigned,
    people_with_combinations,
    review,
    secret_reject,
)
from tests.factories import make_benchmark, make_item


class ReviewerWhoAdjudicatesTests(AccessTestCase):
    """The issue's reproduction: frank reviews and adjudicates; bob reviewed first."""

    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        frank, bob = cls.people["reviewer_adjudicator"], cls.people["reviewer2"]
        cls.benchmark, (cls.item, cls.settled) = assigned("blind", [bob, frank])
        secret_reject(cls.item, bob)
        # A dispute of others elsewhere in the benchmark: it is in every adjudicator's scope.
        review(cls.settled, bob, "accept")
        review(cls.settled, frank, "reject", reason="ambiguous")

    def urls(self) -> dict[str, str]:
        return {
            "reviews api": f"/api/items/{self.item.pk}/reviews/",
            "history": reverse("item-history", args=[self.item.pk]),
            "adjudication": reverse("adjudicate", args=[self.item.pk]),
        }

    def test_he_reads_no_other_verdict_or_comment_before_submitting(self):
        urls = self.urls()
        response = self.api("reviewer_adjudicator", urls["reviews api"])
        self.assert_hidden(response, 403, SECRET, "reject")
        self.assertIn("until you submit your own review", response.json()["detail"])
        for name in ("history", "adjudication"):
            self.assert_hidden(self.page("reviewer_adjudicator", urls[name]), 403, SECRET)
            self.assert_hidden(self.htmx("reviewer_adjudicator", urls[name]), 403, SECRET)

    def test_the_refusal_is_a_page_that_says_why(self):
        response = self.page("reviewer_adjudicator", self.urls()["history"])
        self.assertContains(response, "until you submit your own review", status_code=403)
        self.assertContains(response, 'class="topbar"', status_code=403)  # the app's layout

    def test_his_item_page_offers_the_review_not_the_history(self):
        response = self.page("reviewer_adjudicator", reverse("item", args=[self.item.pk]))
        self.assertContains(response, "data-blinded")
        self.assertContains(response, reverse("review-item", args=[self.item.pk]))
        self.assertNotContains(response, reverse("item-history", args=[self.item.pk]))
        self.assertNotContains(response, SECRET)

    def test_an_adjudicator_who_does_not_review_it_reads_the_first_review_at_once(self):
        response = self.api("adjudicator", self.urls()["reviews api"])
        self.assertEqual(response.status_code, 200)
        self.assertEqual([r["comment"] for r in response.json()], [SECRET])
        self.assertContains(self.page("adjudicator", self.urls()["history"]), SECRET)

    def test_once_he_has_submitted_he_reads_them_as_their_reviewer(self):
        review(self.item, self.people["reviewer_adjudicator"], "accept")
        response = self.api("reviewer_adjudicator", self.urls()["reviews api"])
        self.assertEqual(response.status_code, 200)
        self.assertEqual(len(response.json()), 2)
        self.assertContains(self.page("reviewer_adjudicator", self.urls()["history"]), SECRET)

    def test_the_reviewer_alone_waits_for_every_review_even_after_submitting(self):
        response = self.api("reviewer2", self.urls()["reviews api"])
        self.assert_hidden(response, 403, SECRET)
        self.assertIn("until every review of this item is in", response.json()["detail"])


class CuratorWhoReviewsTests(AccessTestCase):
    """grace curates and reviews: while her review is open, the curator's view is blinded too."""

    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        grace, bob = cls.people["curator_reviewer"], cls.people["reviewer2"]
        cls.benchmark, (cls.item, _other) = assigned("curated", [bob, grace])
        secret_reject(cls.item, bob)

    def test_her_curator_role_does_not_open_the_reviews(self):
        reviews = f"/api/items/{self.item.pk}/reviews/"
        history = reverse("item-history", args=[self.item.pk])
        self.assert_hidden(self.api("curator_reviewer", reviews), 403, SECRET)
        self.assert_hidden(self.page("curator_reviewer", history), 403, SECRET)
        self.assert_hidden(self.htmx("curator_reviewer", history), 403, SECRET)
        page = self.page("curator_reviewer", reverse("item", args=[self.item.pk]))
        self.assertContains(page, "data-blinded")
        self.assertNotContains(page, history)

    def test_a_curator_who_does_not_review_it_reads_them(self):
        response = self.api("curator", f"/api/items/{self.item.pk}/reviews/")
        self.assertEqual([r["comment"] for r in response.json()], [SECRET])
        page = self.page("curator", reverse("item", args=[self.item.pk]))
        self.assertContains(page, reverse("item-history", args=[self.item.pk]))
        self.assertNotContains(page, "data-blinded")

    def test_after_her_review_the_curator_sees_everything_again(self):
        review(self.item, self.people["curator_reviewer"], "accept")
        response = self.api("curator_reviewer", f"/api/items/{self.item.pk}/reviews/")
        self.assertEqual(len(response.json()), 2)
        history = self.page("curator_reviewer", reverse("item-history", args=[self.item.pk]))
        self.assertContains(history, SECRET)


class AgreementAndTriageTests(AccessTestCase):
    """Three reviews per item: two are in, the third reviewer's is open. Agreement statistics
    and triage evidence about that item are the others' verdicts: not for the third."""

    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        alice, bob = cls.people["reviewer"], cls.people["reviewer2"]
        frank = cls.people["reviewer_adjudicator"]
        cls.benchmark, (cls.item,) = assigned("triple", [alice, bob, frank], items=1, per_item=3)
        review(cls.item, alice, "accept")
        secret_reject(cls.item, bob)
        Suspicion.objects.create(
            item=cls.item,
            score=0.82,
            reasons=[
                {"code": "reviewer_rejected", "weight": 0.7, "detail": SECRET,
                 "evidence": {"count": 1, "reviews": 2}},
                {"code": "empty_question", "weight": 0.4, "detail": "", "evidence": {}},
            ],
        )  # fmt: skip
        for code, weight in (("reviewer_rejected", 0.7), ("empty_question", 0.4)):
            TriageFlag.objects.create(
                item=cls.item, benchmark=cls.benchmark, code=code, weight=weight
            )
        # A dispute of others, so that the benchmark is in the adjudicators' scope.
        cls.benchmark.items.create(
            source_index=99, question="Disputed?", options=["a", "b"], answer="A",
            status=ItemStatus.DISPUTED,
        )  # fmt: skip

    def test_agreement_leaves_out_the_item_he_is_reviewing(self):
        url = f"/api/benchmarks/{self.benchmark.name}/agreement/"
        self.assertEqual(self.api("curator", url).json()["overall"]["n"], 1)
        self.assertEqual(self.api("adjudicator", url).json()["overall"]["n"], 1)
        mine = self.api("reviewer_adjudicator", url).json()
        self.assertEqual((mine["overall"]["n"], mine["pairs"]), (0, []))
        page = self.page("reviewer_adjudicator", reverse("agreement", args=[self.benchmark.name]))
        self.assertContains(page, "No item has two reviews yet.")

    def test_triage_hides_the_reviewers_reasons_from_him(self):
        url = f"/api/benchmarks/{self.benchmark.name}/triage/"
        (row,) = self.api("adjudicator", url).json()["results"]
        self.assertEqual(
            [r["code"] for r in row["reasons"]], ["reviewer_rejected", "empty_question"]
        )
        (row,) = self.api("reviewer_adjudicator", url).json()["results"]
        self.assertEqual([r["code"] for r in row["reasons"]], ["empty_question"])
        self.assertAlmostEqual(row["score"], 0.4)
        response = self.api("reviewer_adjudicator", url + "?reason=reviewer_rejected")
        self.assertEqual(response.json()["results"], [])

    def test_the_triage_page_and_its_partial_do_the_same(self):
        url = reverse("triage", args=[self.benchmark.name])
        item_url = reverse("item", args=[self.item.pk])
        for response in (
            self.page("reviewer_adjudicator", url),
            self.htmx("reviewer_adjudicator", url, HTTP_HX_TARGET="results"),
        ):
            self.assertEqual(response.status_code, 200)
            self.assertContains(response, f'data-open="{item_url}"')
            self.assertContains(response, 'class="reason code-empty_question"')
            self.assertNotContains(response, 'class="reason code-reviewer_rejected"')
            self.assertNotContains(response, SECRET)
        filtered = self.htmx(
            "reviewer_adjudicator", url + "?reason=reviewer_rejected", HTTP_HX_TARGET="results"
        )
        self.assertEqual(filtered.status_code, 200)
        self.assertNotContains(filtered, f'data-open="{item_url}"')
        theirs = self.page("adjudicator", url)
        self.assertContains(theirs, 'class="reason code-reviewer_rejected"')


class PairReviewerWhoAdjudicatesTests(AccessTestCase):
    """An open pair review blinds as an item review does."""

    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        frank, bob = cls.people["reviewer_adjudicator"], cls.people["reviewer2"]
        benchmark = make_benchmark("pairs-blind", family="medqdeg")
        clean = make_item(benchmark, index=1, modality="CT")
        cls.twin = make_item(
            benchmark,
            index=2,
            modality="CT",
            clean_twin=clean,
            degradation_type="gaussian_noise",
            degradation_severity="mild",
        )
        Item.objects.filter(pk=clean.pk).update(status=ItemStatus.AGREED)
        make_item(benchmark, index=3, status=ItemStatus.DISPUTED)  # carol's scope
        assignments_create(benchmark=benchmark, reviewers=[bob, frank], per_item=2)
        pair_review_submit(
            item=Item.objects.get(pk=cls.twin.pk),
            reviewer=bob,
            version=1,
            answerable=False,
            realism=1,
            severity_judgement="too_strong",
            comment=SECRET,
        )

    def test_his_open_pair_review_hides_the_first_one(self):
        pk = self.twin.pk
        self.assert_hidden(
            self.api("reviewer_adjudicator", f"/api/items/{pk}/reviews/"), 403, SECRET
        )
        for url in (reverse("item-history", args=[pk]), reverse("adjudicate", args=[pk])):
            self.assert_hidden(self.page("reviewer_adjudicator", url), 403, SECRET)
            self.assert_hidden(self.htmx("reviewer_adjudicator", url), 403, SECRET)
        page = self.page("reviewer_adjudicator", reverse("item", args=[pk]))
        self.assertContains(page, "data-blinded")
        self.assertContains(page, reverse("pair-review", args=[pk]))
        self.assertContains(self.api("adjudicator", f"/api/items/{pk}/reviews/"), SECRET)


class SuperuserWhoReviewsTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        cls.people["root"] = get_user_model().objects.create_superuser("root", password="x")
        cls.benchmark, (cls.item,) = assigned(
            "root-blind", [cls.people["reviewer2"], cls.people["root"]], items=1
        )
        secret_reject(cls.item, cls.people["reviewer2"])

    def test_a_superuser_under_review_is_blinded_too(self):
        url = f"/api/items/{self.item.pk}/reviews/"
        self.assert_hidden(self.api("root", url), 403, SECRET)
        history = reverse("item-history", args=[self.item.pk])
        self.assert_hidden(self.page("root", history), 403, SECRET)
        review(self.item, self.people["root"], "accept")
        self.assertContains(self.api("root", url), SECRET)
