from __future__ import annotations

from django.test import TestCase
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotations.models import Adjudication, Assignment, Item, Review
from annotations.services.review import review_submit
from tests.factories import make_benchmark, make_item, make_personas
from tests.review.helpers import ACCEPT, REJECT, assigned_benchmark, both_review, edit


class ApiTestCase(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.tokens = {
            name: AuthToken.objects.create(user=user)[1] for name, user in cls.people.items()
        }

    def api(self, persona: str | None) -> APIClient:
        client = APIClient()
        if persona:
            client.credentials(HTTP_AUTHORIZATION=f"Token {self.tokens[persona]}")
        return client

    def assert_roles(self, method: str, url: str, allowed: set[str], body=None):
        """401 anonymous, 403 for every persona outside `allowed`."""
        self.assertEqual(getattr(self.api(None), method)(url, body, format="json").status_code, 401)
        for persona in ("reviewer", "adjudicator", "curator", "outsider"):
            if persona not in allowed:
                response = getattr(self.api(persona), method)(url, body, format="json")
                self.assertEqual(response.status_code, 403, (method, url, persona))


class QueueAndItemApiTests(ApiTestCase):
    def setUp(self):
        self.benchmark, (self.item, self.other) = assigned_benchmark(self.people)

    def test_the_queue_gives_my_next_item_then_204(self):
        client = self.api("reviewer")
        response = client.get("/api/queue/next/")
        self.assertEqual(response.status_code, 200)
        self.assertEqual((response.json()["id"], response.json()["version"]), (self.item.pk, 1))
        for item in (self.item, self.other):
            client.post(
                f"/api/items/{item.pk}/reviews/", {"verdict": "accept", "version": 1}, format="json"
            )
        self.assertEqual(client.get("/api/queue/next/").status_code, 204)

    def test_an_item_shows_content_status_and_version(self):
        body = self.api("curator").get(f"/api/items/{self.item.pk}/").json()
        self.assertEqual(body["status"], "in_review")
        self.assertEqual(body["options"][:2], ["Polyp", "Ulcer"])
        self.assertEqual(body["taxonomy"], {"category": "Lesion"})
        self.assertTrue(body["images"][0].startswith("/images/"))

    def test_access_and_methods(self):
        self.assert_roles("get", "/api/queue/next/", {"reviewer"})
        self.assert_roles(
            "get", f"/api/items/{self.item.pk}/", {"reviewer", "adjudicator", "curator"}
        )
        self.assert_roles(
            "post",
            f"/api/items/{self.item.pk}/reviews/",
            {"reviewer"},
            {"verdict": "accept", "version": 1},
        )
        self.assert_roles(
            "post",
            f"/api/items/{self.item.pk}/adjudication/",
            {"adjudicator"},
            {"choice": "a", "version": 1},
        )
        self.assert_roles(
            "post",
            f"/api/benchmarks/{self.benchmark.name}/assignments/",
            {"curator"},
            {"reviewers": ["alice"]},
        )
        self.assert_roles(
            "get", f"/api/benchmarks/{self.benchmark.name}/agreement/", {"adjudicator", "curator"}
        )
        self.assertEqual(self.api("reviewer").delete("/api/queue/next/").status_code, 405)
        self.assertEqual(
            self.api("reviewer").put(f"/api/items/{self.item.pk}/reviews/").status_code, 405
        )
        self.assertEqual(
            self.api("adjudicator").get(f"/api/items/{self.item.pk}/adjudication/").status_code, 405
        )
        self.assertEqual(
            self.api("curator")
            .get(f"/api/benchmarks/{self.benchmark.name}/assignments/")
            .status_code,
            405,
        )
        self.assertEqual(
            self.api("curator")
            .post(f"/api/benchmarks/{self.benchmark.name}/agreement/")
            .status_code,
            405,
        )


class ReviewApiTests(ApiTestCase):
    def setUp(self):
        self.benchmark, (self.item, _other) = assigned_benchmark(self.people)
        self.url = f"/api/items/{self.item.pk}/reviews/"

    def test_a_review_is_created_and_the_second_settles_the_item(self):
        first = self.api("reviewer").post(
            self.url, {**edit(), "version": 1, "seconds_spent": 9}, format="json"
        )
        self.assertEqual(first.status_code, 201, first.json())
        self.assertEqual(first.json()["item_status"], "in_review")
        second = self.api("reviewer2").post(self.url, {**edit(), "version": 1}, format="json")
        self.assertEqual(
            second.json(), {**second.json(), "item_status": "agreed", "item_version": 2}
        )
        self.assertEqual(Item.objects.get(pk=self.item.pk).question, "Which lesion is visible?")

    def test_a_stale_version_is_409_with_the_current_version(self):
        both_review(self.item, self.people, edit(), edit())
        Item.objects.filter(pk=self.item.pk).update(status="in_review")
        Assignment.objects.filter(item=self.item, reviewer=self.people["reviewer"]).update(
            completed_at=None
        )
        response = self.api("reviewer").post(
            self.url, {"verdict": "accept", "version": 1}, format="json"
        )
        self.assertEqual(response.status_code, 409)
        self.assertEqual(
            (response.json()["code"], response.json()["current_version"]), ("conflict", 2)
        )
        self.assertEqual(Review.objects.filter(reviewer=self.people["reviewer"]).count(), 1)

    def test_bad_input_is_400(self):
        client = self.api("reviewer")
        self.assertEqual(
            client.post(self.url, {"verdict": "reject", "version": 1}, format="json").status_code,
            400,
        )
        self.assertEqual(
            client.post(self.url, {"verdict": "nope", "version": 1}, format="json").status_code, 400
        )
        self.assertEqual(
            self.api("adjudicator")
            .post(self.url, {"verdict": "accept", "version": 1}, format="json")
            .status_code,
            403,
        )
        self.assertFalse(Review.objects.exists())

    def test_reviews_are_hidden_from_reviewers_until_both_are_in(self):
        review_submit(
            item=self.item,
            reviewer=self.people["reviewer2"],
            version=1,
            verdict="reject",
            reason="ambiguous",
            comment="BOB-SAYS",
        )
        self.assertEqual(self.api("reviewer").get(self.url).status_code, 403)
        self.assertNotIn(
            "BOB-SAYS", self.api("reviewer").get(f"/api/items/{self.item.pk}/").content.decode()
        )
        self.assertEqual(self.api("outsider").get(self.url).status_code, 403)
        self.assertEqual(self.api(None).get(self.url).status_code, 401)
        self.assertEqual(len(self.api("adjudicator").get(self.url).json()), 1)
        self.assertEqual(len(self.api("curator").get(self.url).json()), 1)
        review_submit(item=self.item, reviewer=self.people["reviewer"], version=1, **ACCEPT)
        reviews = self.api("reviewer").get(self.url).json()
        self.assertEqual([r["reviewer"] for r in reviews], ["alice", "bob"])
        self.assertEqual(reviews[1]["comment"], "BOB-SAYS")


class AdjudicationApiTests(ApiTestCase):
    def setUp(self):
        _benchmark, (item, _other) = assigned_benchmark(self.people)
        self.item = both_review(item, self.people, edit(answer="D"), REJECT)
        self.url = f"/api/items/{self.item.pk}/adjudication/"

    def test_take_a(self):
        response = self.api("adjudicator").post(
            self.url, {"choice": "a", "version": 1}, format="json"
        )
        self.assertEqual(response.status_code, 201)
        self.assertEqual(response.json()["item_status"], "adjudicated")
        self.assertEqual(Item.objects.get(pk=self.item.pk).answer, "D")

    def test_new_content(self):
        content = {"question": "Q?", "options": ["x", "y", "z"], "answer": "C"}
        response = self.api("adjudicator").post(
            self.url, {"choice": "new", "version": 1, "content": content}, format="json"
        )
        self.assertEqual(response.json()["item_version"], 2)
        self.assertEqual(Item.objects.get(pk=self.item.pk).options, ["x", "y", "z"])

    def test_stale_is_409(self):
        response = self.api("adjudicator").post(
            self.url, {"choice": "b", "version": 3}, format="json"
        )
        self.assertEqual(response.status_code, 409)
        self.assertFalse(Adjudication.objects.exists())


class AssignmentAndAgreementApiTests(ApiTestCase):
    def test_a_curator_assigns_by_usernames(self):
        benchmark = make_benchmark("api-assign")
        for index in range(3):
            make_item(benchmark, index=index, split="test" if index else "dev")
        url = f"/api/benchmarks/{benchmark.name}/assignments/"
        body = {"reviewers": ["alice", "bob"], "per_item": 2, "filters": {"split": "test"}}
        response = self.api("curator").post(url, body, format="json")
        self.assertEqual((response.status_code, response.json()), (201, {"created": 4}))
        self.assertEqual(Assignment.objects.filter(item__split="dev").count(), 0)
        unknown = self.api("curator").post(url, {"reviewers": ["alice", "nobody"]}, format="json")
        self.assertEqual(unknown.status_code, 400)

    def test_agreement_numbers(self):
        benchmark, items = assigned_benchmark(self.people, items=2)
        both_review(items[0], self.people, ACCEPT, ACCEPT)
        both_review(items[1], self.people, ACCEPT, REJECT)
        body = self.api("curator").get(f"/api/benchmarks/{benchmark.name}/agreement/").json()
        self.assertEqual(body["overall"]["n"], 2)
        self.assertEqual(body["overall"]["percent"], 0.5)
        self.assertTrue(body["overall"]["warning"])
        self.assertEqual(body["pairs"][0]["reviewer_a"], "alice")
        self.assertEqual(body["pairs"][0]["kappa"], 0.0)  # observed 0.5 = expected 0.5
        self.assertEqual(body["by_field"]["category"]["Lesion"]["n"], 2)
