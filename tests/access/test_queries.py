"""The scope costs no query per benchmark: every list a scoped user reads runs the same number
of queries with one benchmark in scope or six, and with others outside it."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import ItemStatus
from tests.access.helpers import AccessTestCase, assigned, people_with_combinations, review


class ScopedListQueryTests(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        cls.grow(1)

    @classmethod
    def grow(cls, n: int) -> None:
        """n more benchmarks in zoe's and carol's scope (a dispute each), and one outside."""
        alice, zoe = cls.people["reviewer"], cls.people["elsewhere"]
        start = getattr(cls, "made", 0)
        for number in range(start, start + n):
            _benchmark, (item,) = assigned(f"in-{number}", [alice, zoe], items=1, per_item=2)
            review(item, alice, "accept")
            review(item, zoe, "reject", reason="ambiguous")
            assigned(f"out-{number}", [alice], items=1, per_item=1, first_index=100 + number)
        cls.made = start + n

    def counts(self, who: str, urls: list[str], api: bool = False) -> list[int]:
        """The queries of each URL, asked as `who` once logged in and warm."""
        client = APIClient() if api else self.client
        if api:
            client.force_authenticate(self.people[who])
        else:
            client.force_login(self.people[who])
        numbers = []
        for url in urls:
            client.get(url)
            with CaptureQueriesContext(connection) as queries:
                self.assertEqual(client.get(url).status_code, 200, url)
            numbers.append(len(queries.captured_queries))
        return numbers

    def test_lists_cost_the_same_with_more_benchmarks(self):
        pages = {
            "elsewhere": [reverse("dashboard"), reverse("pairs"), reverse("grading")],
            "adjudicator": [
                reverse("adjudication"),
                reverse("agreement-index"),
                reverse("triage-index"),
                reverse("dashboard"),
            ],
        }
        before = {who: self.counts(who, urls) for who, urls in pages.items()}
        before["api"] = self.counts("elsewhere", ["/api/benchmarks/"], api=True)
        self.grow(5)
        after = {who: self.counts(who, urls) for who, urls in pages.items()}
        after["api"] = self.counts("elsewhere", ["/api/benchmarks/"], api=True)
        self.assertEqual(before, after)
        # session, user, roles, then one query per list (two for the pairs page's progress and
        # blinded benchmarks, three for the dashboard's counts and the user's open work)
        self.assertEqual(after["elsewhere"], [6, 5, 4])
        # the adjudication list: count, page of disputes, the first one he may settle
        self.assertEqual(after["adjudicator"], [6, 4, 4, 6])
        self.assertEqual(after["api"], [2])  # benchmarks, counts (roles cached on the user)
        self.assertEqual(
            self.page("adjudicator", reverse("adjudication")).context["page"].paginator.count, 6
        )

    def test_the_item_page_of_a_blinded_reviewer_costs_the_same(self):
        _benchmark, items = assigned("pages", [self.people["reviewer"]], items=3, per_item=1)
        url = reverse("item", args=[items[1].pk])
        self.page("reviewer", url)
        # session, user, roles, item with benchmark and gold flag, its images (two), assignments
        with self.assertNumQueries(7):
            response = self.client.get(url)
        self.assertTrue(response.context["visibility"].reviewing)
        self.assertEqual(items[1].status, ItemStatus.IN_REVIEW)
