"""The way into the work: a queue per benchmark (the hub's "Review my items" and "Adjudicate"
stay in it) and each role's open work on the landing page, counted as the hub counts it."""

from __future__ import annotations

import re

from django.urls import reverse

from annotations.models import Assignment, Item, ItemStatus
from tests.access.helpers import AccessTestCase, assigned, people_with_combinations, review


def action_url(response, key: str) -> str:
    """The link of the hub's action `key`, as the page renders it."""
    match = re.search(rf'href="([^"]+)" data-action="{key}"', response.content.decode())
    assert match, key
    return match.group(1).replace("&amp;", "&")


def work_link(response, benchmark: str, marker: str) -> str:
    html = response.content.decode()
    row = html.split(f'data-work-benchmark="{benchmark}"', 1)[1].split("</tr>", 1)[0]
    match = re.search(rf'href="([^"]+)" {marker}', row)
    assert match, (benchmark, marker)
    return match.group(1).replace("&amp;", "&")


class BenchmarkQueueTest(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        pair = [cls.people["reviewer"], cls.people["reviewer2"]]
        cls.first, cls.first_items = assigned("first", pair, items=2)
        cls.second, cls.second_items = assigned("second", pair, items=2, first_index=10)

    def item_of(self, response) -> Item:
        self.assertEqual(response.status_code, 302)
        pk = int(re.search(r"/review/items/(\d+)/", response["Location"]).group(1))
        return Item.objects.get(pk=pk)

    def test_review_my_items_from_a_hub_stays_in_that_benchmark(self):
        hub = self.page("reviewer", reverse("benchmark", args=["second"]))
        url = action_url(hub, "review")
        self.assertEqual(url, reverse("review-queue") + "?benchmark=second")
        first = self.item_of(self.client.get(url))
        self.assertEqual(first.benchmark, self.second)  # the first item of the global queue is not
        # Next, next: the queue goes round the benchmark's items, never into another's.
        seen = {first.pk}
        after = Assignment.objects.get(item=first, reviewer=self.people["reviewer"]).pk
        for _ in range(3):
            following = self.item_of(self.client.get(reverse("review-queue") + f"?after={after}"))
            self.assertEqual(following.benchmark, self.second)
            seen.add(following.pk)
            after = Assignment.objects.get(item=following, reviewer=self.people["reviewer"]).pk
        self.assertEqual(seen, {item.pk for item in self.second_items})
        # The review page's progress is the benchmark's, as its hub counts it.
        page = self.client.get(reverse("review-item", args=[first.pk]))
        self.assertEqual((page.context["progress"].done, page.context["progress"].total), (0, 2))

        for item in self.second_items:
            review(item, self.people["reviewer"])
        done = self.client.get(reverse("review-queue") + f"?after={after}")
        self.assertContains(done, "Your queue is empty")
        self.assertContains(done, "You have reviewed 2 of 2 assigned items.")
        self.assertContains(done, "data-every-queue")
        # The queue of every benchmark (the menu's "Review queue") leaves the benchmark.
        self.assertEqual(
            self.item_of(self.client.get(reverse("review-queue"))).benchmark, self.first
        )

    def test_a_benchmark_outside_the_scope_is_not_found(self):
        url = reverse("review-queue") + "?benchmark=second"
        self.assertEqual(self.page("elsewhere", url).status_code, 404)

    def test_the_hub_the_landing_page_and_the_queue_count_the_same_open_work(self):
        alice = self.people["reviewer"]
        review(self.first_items[0], alice)
        # An item that left review with alice's assignment still open (a curator rejected it):
        # the queue never serves it, so no page may count it as open.
        Item.objects.filter(pk=self.second_items[0].pk).update(status=ItemStatus.REJECTED)
        hub = self.page("reviewer", reverse("benchmark", args=["second"])).context["hub"]
        landing = {
            benchmark.name: work for benchmark, work in self.client.get("/").context["my_work"]
        }
        queue = self.client.get(reverse("review-queue") + "?benchmark=second", follow=True)
        progress = queue.context["progress"]
        self.assertEqual(hub.mine_open, 1)
        self.assertEqual(landing["second"].review_open, 1)
        self.assertEqual(progress.total - progress.done, 1)
        first_hub = self.client.get(reverse("benchmark", args=["first"])).context["hub"]
        self.assertEqual((first_hub.mine_open, first_hub.mine_done), (1, 1))
        self.assertEqual((landing["first"].review_open, landing["first"].review_done), (1, 1))

    def test_the_landing_page_links_each_benchmark_queue_in_constant_queries(self):
        self.client.force_login(self.people["reviewer"])
        self.client.get("/")
        # session, user, roles, benchmarks, status counts, open work by benchmark
        with self.assertNumQueries(6):
            response = self.client.get("/")
        self.assertEqual(
            work_link(response, "second", "data-work-review"),
            reverse("review-queue") + "?benchmark=second",
        )
        self.assertContains(response, "Review 2 items")
        assigned("third", [self.people["reviewer"]], items=3, per_item=1, first_index=40)
        with self.assertNumQueries(6):
            response = self.client.get("/")
        self.assertEqual(len(response.context["my_work"]), 3)


class BenchmarkDisputesTest(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        pair = [cls.people["reviewer"], cls.people["reviewer2"]]
        cls.first, first_items = assigned("first", pair, items=2)
        cls.second, second_items = assigned("second", pair, items=2, first_index=10)
        for item in (*first_items, *second_items):
            review(item, cls.people["reviewer"], "accept")
            review(item, cls.people["reviewer2"], "reject", reason="ambiguous")
        cls.second_items = second_items

    def test_adjudicate_from_a_hub_lists_and_settles_that_benchmark_only(self):
        hub = self.page("adjudicator", reverse("benchmark", args=["second"]))
        self.assertContains(hub, "2 for you to settle")
        listing = self.client.get(action_url(hub, "adjudicate"))
        self.assertEqual({item.benchmark.name for item in listing.context["page"]}, {"second"})
        self.assertEqual(listing.context["first"].benchmark, self.second)
        page = self.client.get(reverse("adjudicate", args=[listing.context["first"].pk]))
        self.assertEqual(page.context["page"].remaining, 2)  # of this benchmark
        # The list of every benchmark's disputes, from the menu, leaves the benchmark.
        everything = self.client.get(reverse("adjudication"))
        self.assertEqual(everything.context["page"].paginator.count, 4)

    def test_the_landing_page_counts_the_disputes_as_the_hub(self):
        landing = self.page("adjudicator", "/")
        work = {b.name: w for b, w in landing.context["my_work"]}
        self.assertEqual((work["first"].disputes, work["second"].disputes), (2, 2))
        self.assertEqual(
            work_link(landing, "first", "data-work-disputes"),
            reverse("adjudication") + "?benchmark=first",
        )
        hub = self.client.get(reverse("benchmark", args=["first"])).context["hub"]
        self.assertEqual(hub.to_settle, 2)
