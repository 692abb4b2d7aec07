"""Data scope: a reviewer sees the benchmarks they have (or had) work in, an adjudicator also
those with disputes, a curator all; anything else does not exist for them (404) and no list
shows it, in pages, htmx partials and the API."""

from __future__ import annotations

from django.urls import reverse
from django.utils import timezone

from annotations.models import Assignment, Benchmark, Item, ItemImage, ItemStatus
from annotations.selectors.visibility import benchmarks_visible_to
from annotations.services.grading import grading_session_create
from annotations.services.review import item_adjudicate
from tests.access.helpers import (
    AccessTestCase,
    assigned,
    open_baseline,
    people_with_combinations,
    review,
)
from tests.runs.helpers import make_done_run


class ScopeTestCase(AccessTestCase):
    """ "theirs" is alice's and bob's; "zoes" is zoe's alone."""

    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        alice, bob, zoe = (cls.people[p] for p in ("reviewer", "reviewer2", "elsewhere"))
        cls.theirs, cls.items = assigned("theirs", [alice, bob])
        cls.zoes, (cls.zoe_item,) = assigned("zoes", [zoe], items=1, per_item=1, first_index=50)
        cls.item = cls.items[0]
        cls.image = cls.item.item_images.get().image


class PlainReviewerOutsideTheScopeTests(ScopeTestCase):
    def item_urls(self) -> dict[str, str]:
        pk = self.item.pk
        return {
            "benchmark": reverse("benchmark", args=[self.theirs.name]),
            "item": reverse("item", args=[pk]),
            "history": reverse("item-history", args=[pk]),
            "review": reverse("review-item", args=[pk]),
            "image": reverse("image", args=[self.image.sha256]),
        }

    def test_another_benchmarks_pages_and_partials_are_not_found(self):
        for name, url in self.item_urls().items():
            self.assertEqual(self.page("elsewhere", url).status_code, 404, name)
            self.assertEqual(self.htmx("elsewhere", url).status_code, 404, name)

    def test_another_benchmarks_api_is_not_found(self):
        pk = self.item.pk
        for url in (
            f"/api/items/{pk}/",
            f"/api/items/{pk}/reviews/",
            f"/api/images/{self.image.sha256}/boxes/",
        ):
            self.assertEqual(self.api("elsewhere", url).status_code, 404, url)
        refused = self.api(
            "elsewhere", f"/api/items/{pk}/reviews/", "post", {"verdict": "accept", "version": 1}
        )
        self.assertEqual(refused.status_code, 404)

    def test_her_own_benchmark_is_there(self):
        image = self.zoe_item.item_images.get().image
        for url in (
            reverse("benchmark", args=[self.zoes.name]),
            reverse("item", args=[self.zoe_item.pk]),
            reverse("image", args=[image.sha256]),
        ):
            self.assertEqual(self.page("elsewhere", url).status_code, 200, url)
        self.assertEqual(self.api("elsewhere", f"/api/items/{self.zoe_item.pk}/").status_code, 200)

    def test_lists_show_only_her_benchmarks(self):
        names = [row["name"] for row in self.api("elsewhere", "/api/benchmarks/").json()]
        self.assertEqual(names, ["zoes"])
        dashboard = self.page("elsewhere", reverse("dashboard"))
        self.assertEqual([s.benchmark.name for s in dashboard.context["summaries"]], ["zoes"])
        self.assertNotContains(dashboard, reverse("benchmark", args=["theirs"]))
        Benchmark.objects.filter(pk=self.theirs.pk).update(pairs_blinded=True)
        self.assertNotContains(self.page("elsewhere", reverse("pairs")), "theirs")
        self.assertContains(self.page("reviewer", reverse("pairs")), "theirs")

    def test_an_image_used_in_her_benchmark_too_is_hers_to_see(self):
        ItemImage.objects.create(item=self.zoe_item, image=self.image, position=1)
        url = reverse("image", args=[self.image.sha256])
        self.assertEqual(self.page("elsewhere", url).status_code, 200)

    def test_finished_work_keeps_a_benchmark_in_scope(self):
        review(self.zoe_item, self.people["elsewhere"], "accept")
        self.assertEqual(
            Assignment.objects.get(reviewer=self.people["elsewhere"]).completed_at is not None,
            True,
        )
        url = reverse("item", args=[self.zoe_item.pk])
        self.assertEqual(self.page("elsewhere", url).status_code, 200)

    def test_a_human_baseline_alone_brings_its_benchmark_in_scope(self):
        open_baseline(self.theirs, self.people["elsewhere"], self.people["curator"])
        page = self.page("elsewhere", reverse("benchmark", args=[self.theirs.name]))
        self.assertEqual(page.status_code, 200)
        self.assertContains(page, "data-gold-hidden")

    def test_grading_sessions_of_another_benchmark_are_not_hers(self):
        first = make_done_run(self.theirs, self.items, label="one", answers={})
        second = make_done_run(self.theirs, self.items, label="two", answers={1: "B"})
        session = grading_session_create(
            run_a=first, run_b=second, created_by=self.people["curator"]
        )
        self.assertEqual(
            self.page("elsewhere", reverse("grade", args=[session.pk])).status_code, 404
        )
        self.assertEqual(self.page("elsewhere", reverse("grading")).context["sessions"], [])
        self.assertEqual(
            self.page("reviewer", reverse("grade", args=[session.pk])).status_code, 200
        )

    def test_a_curator_sees_every_benchmark(self):
        names = [row["name"] for row in self.api("curator", "/api/benchmarks/").json()]
        self.assertEqual(names, ["theirs", "zoes"])
        for url in self.item_urls().values():
            if "review" not in url:  # the review page is a reviewer's own
                self.assertEqual(self.page("curator", url).status_code, 200, url)


class AdjudicatorWithoutDisputesTests(ScopeTestCase):
    def urls(self) -> list[str]:
        name = self.theirs.name
        return [
            reverse("benchmark", args=[name]),
            reverse("item", args=[self.item.pk]),
            reverse("item-history", args=[self.item.pk]),
            reverse("agreement", args=[name]),
            reverse("triage", args=[name]),
            reverse("robustness", args=[name]),
            f"/api/items/{self.item.pk}/",
            f"/api/benchmarks/{name}/agreement/",
            f"/api/benchmarks/{name}/triage/",
        ]

    def get(self, url: str):
        return (
            self.api("adjudicator", url)
            if url.startswith("/api/")
            else self.page("adjudicator", url)
        )

    def test_a_benchmark_without_disputes_is_not_his(self):
        for url in self.urls():
            self.assertEqual(self.get(url).status_code, 404, url)
        for listing in ("agreement-index", "triage-index", "dashboard"):
            self.assertNotContains(
                self.page("adjudicator", reverse(listing)), "theirs", msg_prefix=listing
            )
        self.assertEqual(self.api("adjudicator", "/api/benchmarks/").json(), [])

    def test_a_dispute_brings_it_in_and_it_stays_once_settled(self):
        review(self.item, self.people["reviewer"], "accept")
        review(self.item, self.people["reviewer2"], "reject", reason="ambiguous")
        self.assertEqual(Item.objects.get(pk=self.item.pk).status, ItemStatus.DISPUTED)
        for url in self.urls():
            self.assertEqual(self.get(url).status_code, 200, url)
        self.assertContains(self.page("adjudicator", reverse("agreement-index")), "theirs")
        item_adjudicate(
            item=Item.objects.get(pk=self.item.pk),
            adjudicator=self.people["adjudicator"],
            choice="a",
            version=1,
        )
        self.assertEqual(Item.objects.get(pk=self.item.pk).status, ItemStatus.ADJUDICATED)
        self.assertEqual(self.get(self.urls()[0]).status_code, 200)
        self.assertEqual(set(benchmarks_visible_to(self.people["adjudicator"])), {self.theirs})

    def test_an_adjudicator_who_reviews_sees_where_he_reviews(self):
        frank = self.people["reviewer_adjudicator"]
        Assignment.objects.create(item=self.zoe_item, reviewer=frank, slot=2)
        self.assertEqual(list(benchmarks_visible_to(frank)), [self.zoes])
        Assignment.objects.filter(reviewer=frank).update(completed_at=timezone.now())
        self.assertEqual(list(benchmarks_visible_to(frank)), [self.zoes])
