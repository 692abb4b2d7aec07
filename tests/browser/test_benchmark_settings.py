"""A curator changes a benchmark's label sets on its settings page, reached from the hub, and
sees the change in the page's history."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from annotations.models import Benchmark, BenchmarkRevision
from tests.browser.conftest import screenshot
from tests.factories import make_benchmark, make_item, make_personas

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def benchmark():
    make_personas()
    benchmark = make_benchmark("gx-settings", label_sets={"t": ["T1", "T2"]})
    make_item(
        benchmark, index=1, kind="label", options=[], answer="T2N0M0", target={"field": "tnm"}
    )
    return benchmark


def test_a_curator_adds_a_label_set_from_the_hub(page, live_server, login, benchmark):
    page.set_viewport_size({"width": 1024, "height": 768})
    login("dave")
    page.goto(f"{live_server.url}/benchmarks/{benchmark.name}/")
    page.click("a[data-action=settings]")
    expect(page.locator("[data-settings-form]")).to_be_visible()
    sets = {"t": ["T1", "T2"], "tnm": ["T1N0M0", "T2N0M0"]}
    page.fill("#id_label_sets", json.dumps(sets, indent=2))
    page.fill("#id_reason", "the TNM set was missing")
    page.click("[data-settings-form] button[type=submit]")
    expect(page.locator("[data-settings-history] tbody")).to_contain_text("the TNM set was missing")
    screenshot(page, "benchmark-settings")
    assert Benchmark.objects.get(pk=benchmark.pk).label_sets == sets
    assert BenchmarkRevision.objects.filter(benchmark=benchmark, setting="label_sets").count() == 1
