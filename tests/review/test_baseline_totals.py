"""A human-baseline session whose items are rejected while it is open: they leave its total, the
page's progress and the API's next item agree, and the session ends when every item still
reviewable is answered."""

from __future__ import annotations

from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Item, Run, RunStatus
from annotations.services.human_baseline import human_baseline_open
from annotations.services.review import assignments_create, review_submit
from tests.factories import PASSWORD, make_benchmark, make_item, make_personas


class BaselineTotalsTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("human-totals")
        cls.items = [make_item(cls.benchmark, index=i, answer="B") for i in range(3)]
        assignments_create(
            benchmark=cls.benchmark,
            reviewers=[cls.people["reviewer"], cls.people["reviewer2"]],
            per_item=2,
        )

    def setUp(self):
        self.run = human_baseline_open(
            benchmark=self.benchmark,
            clinician=self.people["adjudicator"],
            opened_by=self.people["curator"],
        )
        self.page = reverse("baseline", args=[self.run.pk])
        self.client.login(username="carol", password=PASSWORD)
        self.api = APIClient()
        self.api.force_authenticate(self.people["adjudicator"])

    def reject(self, item: Item) -> None:
        """Both reviewers reject the item: it leaves the benchmark's reviewable items."""
        for who in ("reviewer", "reviewer2"):
            item.refresh_from_db()
            review_submit(
                item=item,
                reviewer=self.people[who],
                verdict="reject",
                reason="ambiguous",
                version=item.version,
            )
        item.refresh_from_db()
        self.assertEqual(item.status, "rejected")

    def answer(self, item: Item, letter: str = "B"):
        return self.client.post(self.page, {"item": item.pk, "letter": letter})

    def test_a_rejected_item_leaves_the_total_and_the_session_ends_at_the_last_one(self):
        self.answer(self.items[0])
        self.reject(self.items[2])
        response = self.client.get(self.page)
        self.assertEqual(response.context["item"], self.items[1])
        self.assertContains(response, "<b>1</b> / 2")
        next_item = self.api.get(f"/api/baselines/{self.run.pk}/next/").json()
        self.assertEqual(next_item["item"], self.items[1].pk)

        self.answer(self.items[1], "A")
        self.run.refresh_from_db()
        self.assertEqual((self.run.status, self.run.completed, self.run.total), ("done", 2, 2))
        self.assertEqual(self.run.summary["overall"]["hits"], 1)
        self.assertContains(self.client.get(self.page), "Session complete")
        self.assertEqual(self.api.get(f"/api/baselines/{self.run.pk}/next/").status_code, 204)

    def test_rejecting_the_last_unanswered_item_ends_the_session(self):
        self.answer(self.items[0])
        self.answer(self.items[1])
        self.assertEqual(Run.objects.get(pk=self.run.pk).status, RunStatus.RUNNING)
        self.reject(self.items[2])

        response = self.api.get(f"/api/baselines/{self.run.pk}/next/")
        self.assertEqual(response.status_code, 204)
        self.run.refresh_from_db()
        self.assertEqual((self.run.status, self.run.completed, self.run.total), ("done", 2, 2))
        self.assertIsNotNone(self.run.finished_at)
        listed = self.api.get("/api/baselines/").json()
        self.assertEqual((listed[0]["status"], listed[0]["total"]), ("done", 2))
        self.assertContains(self.client.get(self.page), "Session complete")

    def test_the_page_alone_ends_a_session_whose_last_item_was_rejected(self):
        self.answer(self.items[0])
        self.answer(self.items[1])
        self.reject(self.items[2])
        response = self.client.get(self.page)
        self.assertContains(response, "Session complete")
        self.assertContains(response, "<b>2</b> / 2")
        self.assertEqual(Run.objects.get(pk=self.run.pk).status, RunStatus.DONE)

    def test_an_answered_item_rejected_later_leaves_the_answers_and_the_total(self):
        self.answer(self.items[0])
        self.reject(self.items[0])
        response = self.client.get(self.page)
        self.assertContains(response, "<b>0</b> / 2")
        session = self.api.get("/api/baselines/").json()[0]
        self.assertEqual((session["completed"], session["total"]), (0, 2))

    def test_a_rejected_item_cannot_be_answered(self):
        self.reject(self.items[1])
        body = {"item": self.items[1].pk, "letter": "B"}
        response = self.api.post(f"/api/baselines/{self.run.pk}/answers/", body, format="json")
        self.assertEqual(response.status_code, 400)
        self.assertEqual(self.run.predictions.count(), 0)

    def test_a_limited_session_keeps_its_items_less_those_rejected(self):
        limited = human_baseline_open(
            benchmark=self.benchmark,
            clinician=self.people["adjudicator"],
            opened_by=self.people["curator"],
            limit=2,
        )
        make_item(self.benchmark, index=10)  # imported later: not in the limited session
        self.reject(self.items[1])
        url = f"/api/baselines/{limited.pk}"
        first = self.api.get(f"{url}/next/").json()
        self.assertEqual(first["item"], self.items[0].pk)
        done = self.api.post(f"{url}/answers/", {"item": first["item"], "letter": "B"})
        self.assertEqual((done.json()["status"], done.json()["total"]), ("done", 1))
        self.assertEqual(self.api.get(f"{url}/next/").status_code, 204)
