"""GET /api/benchmarks/NAME/cases/: a Gastric-X benchmark's cases with their counts."""

from __future__ import annotations

from django.urls import reverse
from rest_framework.test import APIClient

from annotations.models import Run, RunStatus
from annotations.services.human_baseline import human_baseline_open
from tests.factories import make_benchmark, make_item


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_it_lists_the_cases_with_their_counts(small_case, people):
    body = client_of(people["reviewer"]).get(reverse("api-benchmark-cases", args=["gxs"])).json()
    assert body["count"] == 1
    (row,) = body["results"]
    assert row["case_id"] == "GX-S-0001" and row["volumes"] == 3
    assert row["items"] == small_case.items.count() and row["boxes"] >= 1
    assert row["tnm"] == small_case.tnm and row["url"] == reverse("api-case", args=[small_case.pk])


def test_the_stage_is_hidden_while_my_baseline_runs(small_case, people):
    run = human_baseline_open(
        benchmark=small_case.benchmark, clinician=people["reviewer"], opened_by=people["curator"]
    )
    url = reverse("api-benchmark-cases", args=["gxs"])
    assert client_of(people["reviewer"]).get(url).json()["results"][0]["tnm"] is None
    assert client_of(people["curator"]).get(url).json()["results"][0]["tnm"] == small_case.tnm
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)
    assert client_of(people["reviewer"]).get(url).json()["results"][0]["tnm"] == small_case.tnm


def test_outside_the_scope_or_the_family_it_is_404(small_case, people):
    make_item(make_benchmark("tabular"))
    url = reverse("api-benchmark-cases", args=["gxs"])
    assert client_of(people["adjudicator"]).get(url).status_code == 404
    assert client_of(people["outsider"]).get(url).status_code == 403
    assert APIClient().get(url).status_code == 401
    tabular = reverse("api-benchmark-cases", args=["tabular"])
    assert client_of(people["curator"]).get(tabular).status_code == 404
