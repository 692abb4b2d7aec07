"""Triage API: the suspects list (curators, adjudicators) and recomputing it (curators)."""

from __future__ import annotations

from django.test import TestCase
from rest_framework.test import APIClient

from annotations.models import ItemStatus, Job
from annotations.services.triage import benchmark_triage
from tests.factories import make_personas
from tests.triage.test_views import broken_benchmark


class TriageApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = broken_benchmark("triaged-api")
        benchmark_triage(benchmark=cls.benchmark)
        # The sound item is disputed: the benchmark is in the adjudicator's scope.
        cls.items[-1].status = ItemStatus.DISPUTED
        cls.items[-1].save()
        cls.url = f"/api/benchmarks/{cls.benchmark.name}/triage/"

    def api(self, who: str | None) -> APIClient:
        client = APIClient()
        if who:
            client.force_authenticate(self.people[who])
        return client

    def test_the_suspects_come_most_suspect_first_with_their_reasons(self):
        response = self.api("curator").get(self.url)
        self.assertEqual(response.status_code, 200)
        body = response.json()
        self.assertEqual(body["count"], 3)  # the sound item is no suspect
        first = body["results"][0]
        self.assertEqual((first["item"], first["index"]), (self.items[0].pk, 0))
        scores = [row["score"] for row in body["results"]]
        self.assertEqual(scores, sorted(scores, reverse=True))
        codes = {reason["code"]: reason for reason in first["reasons"]}
        self.assertEqual(codes["answer_out_of_range"]["label"], "Answer is not an option")
        self.assertIn("empty_option", codes)

    def test_the_list_takes_a_constant_number_of_queries(self):
        client = self.api("curator")
        client.get(self.url)
        # benchmark, count, page of suspects with their items, the items' images (the user's
        # roles are cached on the authenticated user)
        with self.assertNumQueries(4):
            client.get(self.url)

    def test_one_reason_and_index_order(self):
        response = self.api("adjudicator").get(self.url, {"reason": "empty_option"})
        self.assertEqual([row["item"] for row in response.json()["results"]], [self.items[0].pk])
        indexes = [
            row["index"]
            for row in self.api("curator").get(self.url, {"sort": "index"}).json()["results"]
        ]
        self.assertEqual(indexes, sorted(indexes))

    def test_who_may_read_and_recompute(self):
        self.assertEqual(self.api(None).get(self.url).status_code, 401)
        for who in ("reviewer", "outsider"):
            self.assertEqual(self.api(who).get(self.url).status_code, 403, who)
        self.assertEqual(self.api("curator").get("/api/benchmarks/nope/triage/").status_code, 404)
        recompute = self.url + "recompute/"
        self.assertEqual(self.api("adjudicator").post(recompute).status_code, 403)
        with self.captureOnCommitCallbacks(execute=False) as queued:
            self.assertEqual(self.api("curator").post(recompute).status_code, 202)
        self.assertEqual(len(queued), 1)
        self.assertTrue(Job.objects.filter(kind="triage", benchmark=self.benchmark).exists())
