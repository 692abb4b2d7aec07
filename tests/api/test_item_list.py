"""GET /api/benchmarks/NAME/items/: scope, gold hiding, filters, pagination, queries."""

from __future__ import annotations

from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import ItemKind
from tests.access.helpers import (
    AccessTestCase,
    assigned,
    end_baseline,
    open_baseline,
    people_with_combinations,
    secret_reject,
)
from tests.factories import make_benchmark, make_item

GOLD = "GOLD-REFERENCE-TEXT"


class ItemListApiTest(AccessTestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = people_with_combinations()
        reviewers = [cls.people["reviewer"], cls.people["reviewer2"]]
        cls.benchmark, cls.items = assigned(
            "listed", reviewers, items=3, category="Lesion", modality="endoscopy"
        )
        cls.open_item = make_item(
            cls.benchmark, kind=ItemKind.OPEN, answer="", reference=GOLD, category="Report"
        )
        cls.url = reverse("api-benchmark-items", args=["listed"])

    def test_it_lists_the_items_in_index_order_with_their_images(self):
        body = self.api("curator", self.url).json()
        self.assertEqual(body["count"], 4)
        rows = body["results"]
        self.assertEqual([row["index"] for row in rows], [1, 2, 3, 4])
        self.assertEqual(rows[0]["answer"], "A")
        self.assertEqual(rows[0]["taxonomy"], {"category": "Lesion", "modality": "endoscopy"})
        self.assertEqual(rows[3]["kind"], "open")
        self.assertEqual(rows[3]["reference"], GOLD)
        sha = self.items[0].item_images.get().image.sha256
        self.assertEqual(rows[0]["images"], [reverse("image", args=[sha])])
        self.assertEqual(rows[0]["url"], reverse("api-item", args=[self.items[0].pk]))

    def test_it_filters_on_status_kind_and_taxonomy(self):
        def indexes(query: str) -> list[int]:
            return [row["index"] for row in self.api("curator", self.url + query).json()["results"]]

        self.assertEqual(indexes("?kind=open"), [4])
        self.assertEqual(indexes("?status=in_review"), [1, 2, 3])
        self.assertEqual(indexes("?status=pending&kind=open"), [4])
        self.assertEqual(indexes("?category=Lesion&modality=endoscopy"), [1, 2, 3])
        self.assertEqual(indexes("?category=Nothing"), [])

    def test_an_unknown_filter_value_is_400(self):
        response = self.api("curator", self.url + "?status=finished&kind=essay")
        self.assertEqual(response.status_code, 400)
        self.assertEqual(set(response.json()), {"status", "kind"})

    def test_it_is_paginated_with_limit_and_offset(self):
        body = self.api("curator", self.url + "?limit=2&offset=1").json()
        self.assertEqual([row["index"] for row in body["results"]], [2, 3])
        self.assertEqual(body["count"], 4)
        self.assertIn("offset=3", body["next"])
        self.assertIn("limit=2", body["previous"])

    def test_no_review_is_listed_to_a_blinded_reviewer(self):
        secret_reject(self.items[0], self.people["reviewer2"])
        response = self.api("reviewer", self.url)
        self.assert_hidden(response, 200, "SECRET", "ambiguous")
        self.assertEqual(response.json()["results"][0]["status"], "in_review")

    def test_gold_is_null_while_my_human_baseline_runs(self):
        grace = self.people["curator_reviewer"]
        run = open_baseline(self.benchmark, grace, self.people["curator"])
        response = self.api("curator_reviewer", self.url)
        self.assert_hidden(response, 200, GOLD)
        for row in response.json()["results"]:
            self.assertEqual((row["answer"], row["reference"], row["target"]), (None, None, None))
        self.assertEqual(self.api("curator", self.url).json()["results"][0]["answer"], "A")
        end_baseline(run)
        self.assertContains(self.api("curator_reviewer", self.url), GOLD)

    def test_outside_my_scope_it_is_404_and_without_a_role_403(self):
        make_item(make_benchmark("unlisted"))
        other = reverse("api-benchmark-items", args=["unlisted"])
        self.assertEqual(self.api("reviewer", other).status_code, 404)
        self.assertEqual(self.api("elsewhere", self.url).status_code, 404)
        self.assertEqual(self.api("outsider", self.url).status_code, 403)
        self.assertEqual(APIClient().get(self.url).status_code, 401)
        self.assertEqual(self.api("curator", self.url, "post", {}).status_code, 405)

    def test_its_queries_do_not_grow_with_the_page(self):
        client = APIClient()
        client.force_authenticate(self.people["reviewer"])
        # benchmark (in scope), count, items (gold hidden, one subquery), their images; the
        # forced user keeps its roles between requests
        with self.assertNumQueries(4):
            client.get(self.url)
        for _ in range(5):
            make_item(self.benchmark)
        with self.assertNumQueries(4):
            self.assertEqual(client.get(self.url).json()["count"], 9)
