"""The runs API: curators only, OpenAPI-described."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Prediction, Run, RunStatus
from annotations.services import runs as run_services
from tests.factories import make_personas
from tests.runs.helpers import fast_passwords, make_done_run, make_run_benchmark

ROOT = Path(__file__).resolve().parents[2]


@fast_passwords
class RunApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark, cls.items = make_run_benchmark(4, name="endo-api")
        cls.done = make_done_run(cls.benchmark, cls.items, label="api-model", answers={})

    def setUp(self):
        self.api = APIClient()

    def as_(self, who: str) -> APIClient:
        self.api.force_authenticate(self.people[who])
        return self.api

    def test_it_lists_runs_with_their_overall_score(self):
        with self.assertNumQueries(3):  # roles, count, page of runs (benchmark, endpoint joined)
            response = self.as_("curator").get("/api/runs/")
        self.assertEqual(response.status_code, 200)
        [row] = response.json()["results"]
        self.assertEqual(row["label"], "api-model")
        self.assertEqual(row["overall"]["n"], 4)

    def test_a_curator_starts_a_baseline_run(self):
        with self.captureOnCommitCallbacks(execute=False) as callbacks:
            response = self.as_("curator").post(
                "/api/runs/",
                {"benchmark": "endo-api", "baseline": "random", "filters": {"category": "Lesion"}},
                format="json",
            )
        self.assertEqual(response.status_code, 201, response.content)
        self.assertEqual(response.json()["total"], 2)
        self.assertEqual(response.json()["status"], "queued")
        self.assertEqual(len(callbacks), 1)

    def test_a_run_may_score_leniently_too_and_says_which_vlmevalkit_reads_it(self):
        body = {"benchmark": "endo-api", "baseline": "first", "lenient": True}
        with self.captureOnCommitCallbacks(execute=False):
            response = self.as_("curator").post("/api/runs/", body, format="json")
        self.assertEqual(response.status_code, 201, response.content)
        self.assertEqual(
            (response.json()["lenient"], response.json()["vlmeval_commit"]), (True, "e8e78f0")
        )
        self.assertTrue(Run.objects.get(pk=response.json()["id"]).lenient)
        body["lenient"] = "sometimes"
        self.assertEqual(
            self.as_("curator").post("/api/runs/", body, format="json").status_code, 400
        )

    def test_a_run_may_name_an_llm_judge(self):
        run_services.endpoint_ensure_openai(
            name="judge-gpt", base_url="http://127.0.0.1:9/v1", model="judge-model"
        )
        body = {"benchmark": "endo-api", "baseline": "random", "judge": "judge-gpt"}
        with self.captureOnCommitCallbacks(execute=False):
            response = self.as_("curator").post("/api/runs/", body, format="json")
        self.assertEqual(response.status_code, 201, response.content)
        self.assertEqual(response.json()["judge"], "judge-gpt")
        body["judge"] = "nobody"
        self.assertEqual(
            self.as_("curator").post("/api/runs/", body, format="json").status_code, 404
        )

    def test_it_rejects_both_or_neither_endpoint_and_baseline_and_bad_filters(self):
        api = self.as_("curator")
        self.assertEqual(
            api.post("/api/runs/", {"benchmark": "endo-api"}, format="json").status_code, 400
        )
        response = api.post(
            "/api/runs/",
            {"benchmark": "endo-api", "baseline": "first", "filters": {"bogus": 1}},
            format="json",
        )
        self.assertEqual(response.status_code, 400)
        self.assertEqual(Run.objects.count(), 1)

    def test_it_shows_a_run_with_its_summary(self):
        response = self.as_("curator").get(f"/api/runs/{self.done.pk}/")
        self.assertEqual(response.json()["summary"]["overall"]["n"], 4)

    def test_it_cancels_an_active_run_and_refuses_to_cancel_a_finished_one(self):
        run = run_services.run_create(
            benchmark=self.benchmark,
            endpoint=run_services.endpoint_ensure_baseline(baseline="first"),
            enqueue=False,
        )
        api = self.as_("curator")
        response = api.post(f"/api/runs/{run.pk}/cancel/")
        self.assertEqual(response.json()["status"], RunStatus.CANCELLED)
        self.assertEqual(api.post(f"/api/runs/{run.pk}/cancel/").status_code, 400)
        self.assertEqual(api.get(f"/api/runs/{run.pk}/cancel/").status_code, 405)

    def test_it_retries_an_ended_run_and_refuses_one_with_nothing_to_retry(self):
        api = self.as_("curator")
        response = api.post(f"/api/runs/{self.done.pk}/retry/")
        self.assertEqual(response.status_code, 400)
        self.assertIn("nothing to retry", response.json()["detail"])
        Prediction.objects.filter(run=self.done).update(error="timed out", raw_text="")
        response = api.post(f"/api/runs/{self.done.pk}/retry/")
        self.assertEqual(response.status_code, 200)
        self.assertEqual((response.json()["status"], response.json()["failed"]), ("queued", 0))
        self.assertFalse(Prediction.objects.filter(run=self.done).exists())
        self.assertEqual(
            self.as_("reviewer").post(f"/api/runs/{self.done.pk}/retry/").status_code, 403
        )

    def test_it_gives_the_leaderboard(self):
        response = self.as_("curator").get("/api/benchmarks/endo-api/leaderboard/")
        [row] = response.json()
        self.assertEqual(row["run"], self.done.pk)
        self.assertIn("category", row["by"])

    def test_anonymous_callers_get_401_and_graders_403(self):
        for url in (
            "/api/runs/",
            f"/api/runs/{self.done.pk}/",
            "/api/benchmarks/endo-api/leaderboard/",
        ):
            self.assertEqual(APIClient().get(url).status_code, 401)
            self.assertEqual(self.as_("reviewer").get(url).status_code, 403)
        self.assertEqual(self.as_("adjudicator").post("/api/runs/", {}).status_code, 403)

    def test_the_schema_describes_the_endpoints_and_validates(self):
        self.assertEqual(reverse("api-runs"), "/api/runs/")
        result = subprocess.run(
            [
                sys.executable,
                "manage.py",
                "spectacular",
                "--validate",
                "--fail-on-warn",
                "--file",
                "/dev/null",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        relevant = [
            line for line in result.stderr.splitlines() if "runs" in line or "leaderboard" in line
        ]
        self.assertEqual(relevant, [])
