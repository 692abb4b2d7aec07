from __future__ import annotations

import math

import pytest
from django.urls import reverse

from annotations.models import Item, Prediction, Run, RunKind, RunStatus
from annotations.selectors.pairs import robustness
from annotations.services.degrade import benchmark_degrade
from tests.pairs.helpers import make_pair_benchmark

pytestmark = pytest.mark.django_db


def make_run(benchmark, label: str, misses: set[tuple[str, str]], kind=RunKind.MODEL) -> Run:
    """A finished run: every item right except those (modality, severity) listed."""
    run = Run.objects.create(benchmark=benchmark, kind=kind, label=label, status=RunStatus.DONE)
    for item in Item.objects.filter(benchmark=benchmark):
        level = item.degradation_severity or "clean"
        Prediction.objects.create(
            run=run, item=item, extracted="A", hit=(item.modality, level) not in misses
        )
    return run


@pytest.fixture
def degraded_benchmark(db):
    benchmark = make_pair_benchmark()
    benchmark_degrade(benchmark=benchmark, kinds="gaussian_blur", severities="mild,severe", seed=0)
    return benchmark


def test_accuracy_by_level_and_the_paired_drop(degraded_benchmark):
    misses = {("CT", "severe"), ("Dermoscopy", "mild"), ("Dermoscopy", "severe")}
    make_run(degraded_benchmark, "model-a", misses)
    (report,) = robustness(degraded_benchmark)
    assert {level: (s.hits, s.n) for level, s in report.overall.items()} == {
        "clean": (2, 2),
        "mild": (1, 2),
        "severe": (0, 2),
    }
    assert math.isclose(report.drop, -0.75) and report.pairs == 4
    ct = next(row for row in report.groups["modality"] if row.label == "CT")
    assert math.isclose(ct.drop, -0.5)
    (blur,) = report.groups["kind"]
    assert blur.label == "gaussian_blur"
    assert (blur.scores["clean"].hits, blur.scores["clean"].n) == (2, 2)  # the clean twins
    assert [row.label for row in report.groups["source"]] == ["ISIC", "TCIA"]
    assert report.drop_text == "-75.0 pp"


def test_a_run_without_predictions_is_left_out(degraded_benchmark):
    Run.objects.create(benchmark=degraded_benchmark, kind=RunKind.MODEL, label="empty")
    assert robustness(degraded_benchmark) == []


def test_the_page_draws_a_chart_per_run(client, people, degraded_benchmark):
    make_run(degraded_benchmark, "model-a", {("CT", "severe")})
    make_run(degraded_benchmark, "Dr. Human", set(), kind=RunKind.HUMAN)
    client.force_login(people["curator"])
    response = client.get(reverse("robustness", args=["medq"]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "model-a" in html and "Dr. Human" in html
    assert html.count('<svg class="robust-chart"') == 2 * 4  # all, modality, kind, source
    assert 'data-row="gaussian_blur"' in html and "-25.0 pp" in html


def test_the_page_runs_a_constant_number_of_queries(
    client, people, degraded_benchmark, django_assert_num_queries
):
    client.force_login(people["curator"])
    url = reverse("robustness", args=["medq"])
    make_run(degraded_benchmark, "one", set())
    # session, user, roles, benchmark, runs, predictions
    with django_assert_num_queries(6):
        client.get(url)
    make_run(degraded_benchmark, "two", {("CT", "mild")})
    make_run(degraded_benchmark, "three", set())
    with django_assert_num_queries(6):
        assert len(client.get(url).context["reports"]) == 3


def test_an_empty_benchmark_says_so(client, people, degraded_benchmark):
    client.force_login(people["curator"])
    response = client.get(reverse("robustness", args=["medq"]))
    assert response.status_code == 200
    assert "No run has predictions" in response.content.decode()


@pytest.mark.parametrize("persona", ["reviewer", "outsider"])
def test_reviewers_and_outsiders_may_not_see_robustness(
    client, people, persona, degraded_benchmark
):
    client.force_login(people[persona])
    assert client.get(reverse("robustness", args=["medq"])).status_code == 403


def test_robustness_needs_login_and_get(client, people, degraded_benchmark):
    url = reverse("robustness", args=["medq"])
    assert "/login/" in client.get(url).url
    client.force_login(people["curator"])
    assert client.post(url).status_code == 405
    assert client.get(reverse("robustness", args=["nope"])).status_code == 404
